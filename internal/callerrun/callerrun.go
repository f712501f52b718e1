// Package callerrun holds the optional interface through which a
// Channel of snodo's own (the Streamable HTTP transport) lets a request's
// exchange run on the goroutine of the caller that waits for its answer,
// rather than on a goroutine of the transport's that the caller then
// waits on: one hand-off less per call, each way. The engine asks for it
// with a type assertion on the Channel; a user's transport, which has
// only connection.Channel's Send, is used as before.
package callerrun

// Sender is a Channel that can leave a request's exchange to its caller.
type Sender interface {
	// SendRequest is Channel.Send for a request line with ID id. It
	// returns the exchange for the caller to run once it has let go of
	// the lock it sends under, or nil when the exchange runs elsewhere
	// (queued behind other messages, or a kind the transport runs on its
	// own goroutines). r is what the engine knows of the line, which the
	// transport then need not scan for it.
	SendRequest(msg []byte, r Request) (Runner, error)
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
