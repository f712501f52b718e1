package connection

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Transport carries one connection's JSON-RPC messages to a server and
// back. stdio (a child process: snodo.Connect), Streamable HTTP (HTTP,
// snodo.ConnectHTTP), HTTP+SSE of 2024-11-05 (SSE) and the in-memory
// transport (InMemory) are its implementations inside snodo; a user's own
// (a unix socket, a websocket) is given to snodo.ConnectTransport or
// snodo.TransportTarget.
// The request table, timeouts, cancellation, progress, subscriptions,
// server requests and telemetry above it are the same whatever the
// transport: nothing above this interface asks which one it is.
//
// A Transport is a recipe, not a connection: Open is called once per
// connection, and again for each new connection a supervisor or a pool
// makes, so a Transport must be safe to open again after an earlier
// Channel has ended.
type Transport interface {
	// Open starts a connection to the server and returns its Channel
	// once messages can be sent. What the server sends goes to p.Receive
	// from then on, until the Channel is Done. ctx bounds the opening
	// only (the connection's owner bounds the rest). An error means
	// nothing was started: nothing is left to close.
	Open(ctx context.Context, p Peer) (Channel, error)
}

// Peer is the connection's side of an open Transport: where the
// server's messages go and the limits the transport keeps. Its funcs are
// safe for concurrent use and never block.
type Peer struct {
	// Receive takes one message the server sent: one JSON-RPC message
	// (an object, or a batch array), with or without surrounding white
	// space. The connection owns msg from then on: the transport must
	// not touch it again. Messages of one stream (a process's stdout,
	// one HTTP response) must be received in the order they came.
	Receive func(msg []byte)
	// Fail completes the request with ID id (the integer the
	// connection gave it) with err, when the transport knows its answer
	// will never come (its HTTP exchange failed, say) and the connection
	// lives on. An err that is not a *jsonrpc.Error (snodo.Error) is
	// wrapped in one with code -32603. A request no longer waiting is
	// left alone.
	Fail func(id int64, err error)
	// MaxMessageBytes is the largest message the connection accepts
	// (snodo.WithMaxLineBytes): a transport fails the request whose answer
	// is larger, or drops the message, without reading it whole.
	MaxMessageBytes int
	// Timeout is the connection's per-request timeout (negative: none),
	// which a transport may use to bound what it sends on its own.
	Timeout time.Duration
	// Logger is the connection's logger (never nil).
	Logger *slog.Logger
}

// Channel is an open Transport: one connection's way to the server.
type Channel interface {
	// Send sends one message: one JSON-RPC message on one line, without
	// its newline. The transport must not keep msg after Send returns
	// (copy it to keep it), must not block on the server for long (queue
	// what cannot go at once, within a bound), and keeps the order of
	// the messages it is given. An error means msg was not sent and the
	// transport takes no more: the connection stops.
	Send(msg []byte) error
	// Close ends the connection: it sends what it has queued within a
	// short grace, tells the server (closing stdin, ending an HTTP
	// session), and returns once that is done. Messages that arrive
	// later may still go to Receive until Done. Idempotent.
	Close() error
	// Done is closed once the transport has ended for good: the server
	// process reaped, the HTTP session over, nothing left that could
	// call Peer.Receive.
	Done() <-chan struct{}
	// Err says why the transport ended on its own (the server exited,
	// the session expired, the endpoint cannot be reached); nil when it
	// ended because Close was called, or while it runs. An error from
	// the server's side should wrap one of snodo's sentinels
	// (snodo.ErrServerExited, snodo.ErrSessionExpired,
	// snodo.ErrServerUnreachable) where one fits.
	Err() error
}

// closeFlushTimeout bounds how long a Channel's Close may spend sending
// what is queued, as the stdio connection bounds its last flush.
const closeFlushTimeout = 2 * time.Second

// errChannelClosed is what Send returns once Close was called.
var errChannelClosed = errors.New("the transport is closed")

// endReason is why a transport ended on its own (Channel.Err): what
// happened, in words, wrapping the sentinel snodo exports for it.
type endReason struct {
	what  string
	cause error
}

func (e *endReason) Error() string { return e.what }
func (e *endReason) Unwrap() error { return e.cause }
