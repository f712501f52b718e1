// Package demoserver is a small MCP server, written to be read: the example
// server that `snodo demo` talks to. The snodo binary runs it when started
// as `snodo __demo-server`, so the demo needs nothing but the binary.
//
// It speaks the modern era of MCP (protocol 2026-07-28) over stdio: one
// JSON-RPC message per line on stdin and stdout, no initialize handshake,
// and every request carrying its protocol version in _meta.
//
//	client                                   demo server
//	  server/discover ─────────────────────►  versions, capabilities, serverInfo
//	  tools/list ──────────────────────────►  countdown, greet (and later time)
//	  tools/call countdown ────────────────►  notifications/progress ×N, then "Liftoff!"
//	  tools/call greet ────────────────────►  resultType "input_required": please
//	                                          answer elicitation/create "name"
//	  tools/call greet + inputResponses ───►  "Hello, <name>!"
//	  subscriptions/listen {toolsListChanged}► notifications/subscriptions/acknowledged
//	                                          … the time plugin finishes loading …
//	                                     ◄──  notifications/tools/list_changed
//	  notifications/cancelled ─────────────►  the request or subscription stops
//	  (stdin closed) ──────────────────────►  in-flight requests finish; exit 0
//
// The files follow the message flow: wire.go (JSON-RPC framing), server.go
// (the read loop, dispatch and cancellation), tools.go (the tools, progress
// and the multi round-trip request), listen.go (subscriptions and the
// plugin that changes the tool list), http.go (the same server on
// Streamable HTTP, which `snodo demo` serves in its own process for its
// HTTP step).
package demoserver
