package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/snodo/snodo"
)

var _ snodo.Session = (*Client)(nil)

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
//   - subscriptions/listen: a subscription's events come to the host's
//     connection, which only forwards those of subscriptions opened on
//     the listen endpoint; sent as a call, it held a member of the pool
//     until the caller's timeout and none of its events reached the
//     caller.
//   - resources/subscribe, resources/unsubscribe (legacy): the host's
//     pool holds its connections' resource subscriptions and subscribes
//     them again after a restart; a caller's unsubscribe could end one
//     the host's program made, and the updates reach the host, never a
//     remote caller.
//   - logging/setLevel (legacy): the log level is the host's, for all
//     its callers (supervisor.Pool.SetLoggingLevel); log messages reach
//     the host, never a remote caller.
//
// server/discover is forwarded: it is stateless and changes nothing on
// the server (a modern server answers it, a legacy one says -32601).
func refusedMethod(method string) string {
	switch {
	case method == "initialize":
		return "the host's connection is initialized already; the host does the handshake " +
			"(remote.Client.Info, or `snodo --nats URL --server NAME info`, tells what the server answered it)"
	case method == "subscriptions/listen":
		return "a subscription's events reach a remote caller only through the host's listen endpoint: " +
			"use remote.Client.Listen (`snodo --nats URL --server NAME listen`)"
	case method == "resources/subscribe" || method == "resources/unsubscribe":
		return "the host's pool holds its connections' resource subscriptions, and their updates reach the host, never a remote caller: " +
			"watch resources with remote.Client.Listen and Filter.ResourceSubscriptions (modern servers)"
	case method == "logging/setLevel":
		return "the host sets its servers' log level for all its callers (supervisor.Pool.SetLoggingLevel), " +
			"and their log messages reach the host, never a remote caller"
	case strings.HasPrefix(method, "notifications/"):
		return "notifications are the host's connection's own; a remote caller sends requests only " +
			"(to stop a call of your own, cancel its ctx or let its timeout pass: the host cancels it on the server)"
	}
	return ""
}

// withoutProgressToken is params without a _meta.progressToken the
// caller set. The progress token on the host's connection is the host's
// own (the request's id there, set when the caller asks for progress): a
// caller's would let it send its progress to another caller's call, whose
// id it can guess, and would take the place of the host's, so that the
// caller's own progress was lost. params that are not an object, or
// carry no such token, are returned as they are.
func withoutProgressToken(params []byte) []byte {
	// The fast path: no member can be named progressToken, not even one
	// written with escapes ("progress\u0054oken" decodes to it too).
	if !bytes.Contains(params, []byte(`progressToken`)) && bytes.IndexByte(params, '\\') < 0 {
		return params
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(params, &members) != nil || members == nil {
		return params
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(members["_meta"], &meta) != nil || meta == nil {
		return params
	}
	if _, ok := meta["progressToken"]; !ok {
		return params
	}
	delete(meta, "progressToken")
	m, err := json.Marshal(meta)
	if err != nil {
		return params
	}
	members["_meta"] = m
	out, err := json.Marshal(members)
	if err != nil {
		return params
	}
	return out
}

// Notify always fails, with an error wrapping errors.ErrUnsupported that
// says why: notifications are the host's connection's own (see the hosts'
// refusal of notifications/…). It is here so that a Client is a
// snodo.Session.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	_ = params
	if ctx == nil {
		return nilContextError(method)
	}
	return fmt.Errorf("remote: %s to %s: %w: %s", method, c.name, errors.ErrUnsupported, refusedMethod("notifications/"))
}
