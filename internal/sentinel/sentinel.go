// Package sentinel holds every sentinel error a call, a connection or a
// subscription can end with, where the machinery that raises them (the
// transports, the engine, the actors, the subscriptions) can use them.
// Package snodo exports each under the same name, with its
// documentation; it is their one public name.
package sentinel

import "errors"

// Why a connection stopped.
var (
	ErrClosed       = errors.New("connection closed by the client")
	ErrServerExited = errors.New("server exited")
	ErrStdinClosed  = errors.New("server closed its stdin")
	ErrStdoutClosed = errors.New("server closed its stdout")
	ErrNotReading   = errors.New("server is not reading its stdin")
	// The Streamable HTTP transport's own.
	ErrSessionExpired    = errors.New("the server ended the HTTP session")
	ErrServerUnreachable = errors.New("the MCP endpoint cannot be reached")
	// The HTTP+SSE transport's own.
	ErrStreamEnded = errors.New("the server ended the SSE stream")
)

// Why one request failed while its connection lives on, or how.
var (
	ErrStreamBroken    = errors.New("snodo: the HTTP answer ended before the response")
	ErrNotJSONRPC      = errors.New("snodo: the HTTP answer is not a JSON-RPC message")
	ErrMessageTooLarge = errors.New("snodo: a message from the server is too large")
	ErrWriteQueueFull  = errors.New("snodo: write queue full")
	ErrNotSent         = errors.New("snodo: the request was never read by the server")
)

// Why an actor managed by snodo stopped.
var (
	ErrOwnerExited   = errors.New("owner exited")
	ErrActorStopped  = errors.New("actor stopped")
	ErrActorPanicked = errors.New("actor panicked")
)

// Why a subscription ended.
var (
	ErrSubscriptionClosed    = errors.New("snodo: subscription closed by the client")
	ErrSubscriptionTeardown  = errors.New("snodo: the server tore the subscription down")
	ErrSubscriptionQueueFull = errors.New("snodo: subscription queue full")
)
