// Package callerrun holds the optional interface through which a
// Channel of snodo's own (the Streamable HTTP transport) lets a request's
// exchange run on the goroutine of the caller that waits for its answer,
// rather than on a goroutine of the transport's that the caller then
// waits on: one hand-off less per call, each way. The engine asks for it
// with a type assertion on the Channel; a user's transport, which has
// only connection.Channel's Send, is used as before.
package callerrun

import "github.com/snodo/snodo/internal/jsonrpc"

// Sender is a Channel that can leave a request's exchange to its caller.
//
// A request goes in two steps, so that the engine's send lock, which
// orders every message, is held only for the step that needs the order:
// PrepareRequest, outside the lock, makes the exchange (a copy of the
// line, the HTTP headers that mirror it); SendRequest, under the lock,
// sends it. With 64 callers at once, work done under that lock made
// them queue on it, each parked and woken in turn.
type Sender interface {
	// PrepareRequest makes the exchange of a request line (without its
	// newline) before it is sent. r is what the engine knows of the
	// line, which the transport then need not scan for it. The transport
	// keeps no reference to msg. The exchange is then either sent
	// (SendRequest) or discarded.
	PrepareRequest(msg []byte, r Request) Prepared
	// SendRequest is Channel.Send for a prepared request. It returns the
	// exchange for the caller to run once it has let go of the lock it
	// sends under, or nil when the exchange runs elsewhere (queued
	// behind other messages, or a kind the transport runs on its own
	// goroutines).
	SendRequest(p Prepared) (Runner, error)
}

// Prepared is a request's exchange that PrepareRequest made and that is
// not sent yet.
type Prepared interface {
	// Discard releases an exchange that will not be sent (the
	// connection stopped taking messages meanwhile).
	Discard()
}

// Request is what the engine knows of a request line it built.
type Request struct {
	ID     int64
	Method string
	// Params are the params as the engine wrote them into the line,
	// before the _meta object Meta was spliced in (an encoded JSON value;
	// nil or empty for none).
	Params []byte
	// Meta is the encoded object the engine spliced into the params as
	// their "_meta" member (the trace context's members may follow it
	// there), or nil when it spliced none: then any _meta is Params' own.
	Meta []byte
	// Answer, when not nil, takes the response to this request in place
	// of the Channel's Peer.Receive, with env the transport's own
	// jsonrpc.Scan of msg: the engine then routes it without scanning it
	// again. msg is the engine's from then on, as with Receive. Only a
	// response whose ID is this request's goes to it, and only one the
	// transport left as it came.
	Answer func(env jsonrpc.Envelope, msg []byte)
}

// Runner is one request's exchange, left to the caller.
type Runner interface {
	// Run performs the exchange on the calling goroutine until the
	// answer has been delivered to the connection, the request has
	// failed, the rest of the answer (a stream) has been handed to
	// another goroutine, or Interrupt stopped it. It reports whether
	// Interrupt ended it before the answer, having told the server so
	// (for Streamable HTTP: the request's stream was closed, which is
	// its cancellation): the caller then sends no cancellation of its
	// own. Run is called exactly once.
	Run() (cancelled bool)
	// Interrupt stops Run early: the caller gave up (its context is
	// done, or the request's timeout passed). It never blocks, is safe
	// to call from any goroutine and at any time, also after Run has
	// returned, and more than once.
	Interrupt()
}
