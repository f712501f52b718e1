// Package snodo is an MCP (Model Context Protocol) client for Go services
// that run MCP servers as child processes and talk to them over stdio.
//
// Connect starts a server command (no shell) and settles the protocol era
// it speaks: modern (2026-07-28: server/discover, stateless requests,
// subscriptions/listen, multi-round-trip input_required results) or
// legacy (2025-11-25: initialize, requests the server sends to the
// client). The returned *Client is safe for any number of goroutines and
// actors at once, with requests in flight together:
//
//	c, err := snodo.Connect(ctx, "npx", []string{"-y", "@modelcontextprotocol/server-everything"})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hello"})
//
// The typed calls (ListTools, CallTool,
// ReadResource, GetPrompt, Complete, Ping, …) are the methods of Calls,
// which Client embeds; Request sends any method and returns the raw
// result. A typed result keeps the server's _meta object raw, in its
// Meta field, sharing the answer's bytes: json.Unmarshal it into a map or
// a struct to read it (the server's identity, for one, is its member
// "io.modelcontextprotocol/serverInfo", an Implementation). A
// ServerRequestHandler (WithServerRequestHandler) answers what
// the server asks of the client, in both eras; notifications no request
// claims go to WithNotificationHandler; Listen opens a subscription.
// Every queue is bounded, every wait ends with its ctx or a timeout, and
// Close leaves no process behind once the server exits at EOF.
//
// Errors are the ctx's own or a *Error: the server's, or a local one errors.Is
// tells apart (ErrTimeout, -32001; ErrConnectionClosed, -32000, with the
// reason the connection stopped, such as snodo.ErrServerExited).
//
// Each connection is a protoactor-go actor: its PID takes calls as
// messages (Call, ToolCall), ConnectTo connects from an actor, and
// NotificationsTo, ListenTo and handlers.ToActor deliver to actors.
// Package supervisor restarts servers and pools them, package servers
// reads the mcpServers file MCP hosts use, and package remote serves and
// calls named servers over NATS. The repository's docs/ directory has the
// architecture, the error codes, the security model and the guides.
package snodo
