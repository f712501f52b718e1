// Package gateway serves a snodo.Session — a plain client, a supervised
// client, a pool, a remote name — to any MCP client over Streamable HTTP,
// in both eras: the server side of the transport, joined to the client
// side snodo already has.
//
//	MCP client ──POST/GET/DELETE──▶ Handler ──Session.Request──▶ server(s)
//	           ◀──JSON or SSE─────          ◀──result, progress,
//	                                           server requests, logs
//
// What it keeps: every request goes to the backend with its params as the
// client sent them (the client's _meta with them), and its answer comes
// back as the server sent it — a raw result, an input_required result, an
// error with its code and data. Progress goes out on the call's own stream
// before its result; logs go to the call that asked for them; server
// requests go to the client whose call caused them and its answer goes
// back; list changes and resource updates go to the clients that follow
// them, and after a backend restart every list is announced as changed.
//
// What it changes: a legacy client (initialize, Mcp-Session-Id) gets a
// session of the gateway's own, pinned to one pool member; when that
// member's server restarts the session ends (404) and the client
// initializes again on a live member. Against a modern backend the
// gateway translates for legacy clients: logging/setLevel becomes the
// logLevel of each request's _meta, resources/subscribe a subscription,
// and input_required rounds legacy server requests. tools/list,
// prompts/list and resources/list are answered from a ListCache.
//
// HTTP discipline: Origin and Host checks against DNS rebinding (403), a
// body limit (413), malformed JSON answered -32700, header checks of the
// 2026-07-28 transport (-32020), bounded sessions with an idle timeout,
// and NewServer's header read timeout.
package gateway
