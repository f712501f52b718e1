package remote

import "strings"

// refusedMethod is the one place that decides which methods a host
// refuses to forward from a remote caller: those its own connection to
// the MCP server manages. It returns why method is refused, with what to
// do instead, or "" when the host forwards it.
//
//   - initialize: the host did the handshake when it connected its
//     server; a second one could reset a legacy server mid-session, under
//     every other caller of that connection.
//   - notifications/… (initialized, cancelled, progress,
//     roots/list_changed, …): notifications are the host's connection's
//     own, and a caller can only send requests; one named
//     notifications/cancelled could cancel another caller's request on a
//     server that reads a message's method before its id.
//
// server/discover is forwarded: it is stateless and changes nothing on
// the server (a modern server answers it, a legacy one says -32601).
func refusedMethod(method string) string {
	switch {
	case method == "initialize":
		return "the host's connection is initialized already; the host does the handshake " +
			"(remote.Client.Info tells what the server answered it)"
	case strings.HasPrefix(method, "notifications/"):
		return "notifications are the host's connection's own; a remote caller sends requests only " +
			"(to stop a call of your own, cancel its ctx or let its timeout pass: the host cancels it on the server)"
	}
	return ""
}
