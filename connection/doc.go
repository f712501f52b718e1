// Package connection is snodo's stdio transport: one connection actor
// (protoactor-go) owning one MCP server child process.
//
//	caller goroutines ──Request──► table (id → call) ──line──► writer ──► server stdin
//	server stdout ──► reader goroutine ──answer──► table ──wake──► caller goroutine
//	                        └──server request / cancel──► connection actor ──► handler children
//	owner (ctx or actor) ◄── watched by ── connection actor ── on stop: fail callers, close stdin
//
// Requests do not pass through the actor's mailbox: the caller registers
// in the table and hands its line to the writer (a lone caller writes it
// itself, without blocking; otherwise, and for what a full pipe does not
// take, the writer's goroutine writes), and the reader completes the call
// directly. The actor owns the connection's life: the owner watch, exit
// signals, server-request handlers, and the stop that fails every caller
// with -32000 and closes the server's stdin. See docs/architecture.md.
package connection
