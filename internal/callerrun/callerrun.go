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
	// own goroutines).
	SendRequest(msg []byte, id int64) (Runner, error)
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
