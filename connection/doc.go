// Package connection is snodo's transports: the interface a connection's
// JSON-RPC messages travel through (Transport, opened into a Channel,
// feeding the connection's Peer) and the ones snodo provides as values:
// InMemory (a server run in this process), HTTP (a Streamable HTTP
// endpoint) and SSE (a server of the HTTP+SSE transport of 2024-11-05).
// Give any of them, or a Transport of your own, to snodo.ConnectTransport
// or snodo.TransportTarget; snodo.Connect (stdio) and snodo.ConnectHTTP
// choose one for you.
//
// What this package exports is decided by one rule: would a user writing
// or choosing a transport need it? So it holds the contract (Transport,
// Peer, Channel), the transports, the error an HTTP transport reports an
// error status with (HTTPStatusError, which errors.As finds in a
// request's error), and which way a traced line went (Direction, for
// snodo.WithWireTrace). The connection engine above every transport (the
// request table, timeouts, cancellation, progress, server requests, and
// the connection actor that owns a stdio server's child process) is
// internal to snodo, and so is the stdio transport, which that actor
// runs itself. Why a connection or a request ended is told by package
// snodo's sentinels (snodo.ErrServerExited, snodo.ErrSessionExpired, …),
// which a Channel's Err should wrap where one fits. See
// docs/architecture.md.
package connection
