package subscription

import (
	"errors"
)

// Why a subscription ended, for errors.Is on Err (see the package doc).
// A graceful end, signalled by the server answering the listen request,
// leaves Err nil.
var (
	// ErrClosed: Close was called.
	ErrClosed = errors.New("snodo: subscription closed by the client")
	// ErrServerTeardown: the server sent notifications/cancelled for the
	// listen request. Listen again to resume receiving events.
	ErrServerTeardown = errors.New("snodo: the server tore the subscription down")
	// ErrQueueFull: events arrived faster than they were taken and the
	// queue passed its bound; the subscription was cancelled on the server.
	ErrQueueFull = errors.New("snodo: subscription queue full")
)

// localEnd marks a cancellation cause set by this package, so that it can
// be told apart from the cause of the owner's context.
type localEnd struct{ err error }

func (e *localEnd) Error() string { return e.err.Error() }
func (e *localEnd) Unwrap() error { return e.err }
