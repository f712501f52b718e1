// Package engine is snodo's JSON-RPC connection engine: one connection
// actor (protoactor-go) per connection, owning a stdio server's child
// process, or the Channel of any other connection.Transport.
//
//	caller goroutines ──Request──► table (id → call) ──line──► writer ──► server stdin (or Channel.Send)
//	server stdout ──► reader goroutine ──answer──► table ──wake──► caller goroutine
//	  (or Peer.Receive)     └──server request / cancel──► connection actor ──► handler children
//	owner (ctx or actor) ◄── watched by ── connection actor ── on stop: fail callers, close stdin
//
// Requests do not pass through the actor's mailbox: the caller registers
// in the table and hands its line to the writer (a lone caller writes it
// itself, without blocking; otherwise, and for what a full pipe does not
// take, the writer's goroutine writes), and the reader completes the call
// directly. The actor owns the connection's life: the owner watch, exit
// signals, server-request handlers, and the stop that fails every caller
// with -32000 and closes the server's stdin. It uses package
// connection's types (Transport, Peer, Channel, Direction), and decides
// which transport a connection runs on in one place (transport.go);
// package connection imports nothing of it. The engine is internal:
// users reach it through package snodo. See docs/architecture.md.
package engine
