package snodo

import (
	"time"

	"github.com/snodo/snodo/connection"
)

// Progress is one progress update for a request: Progress increases, Total
// is 0 when unknown, Message is an optional status line.
type Progress = connection.Progress

// RequestOption tunes one request.
type RequestOption func(*connection.CallOptions)

// Timeout overrides the connection's timeout for this request; a negative
// value waits for ever. On expiry the caller gets a -32001 *Error
// (errors.Is(err, ErrTimeout)) and the server notifications/cancelled.
func Timeout(d time.Duration) RequestOption {
	return func(o *connection.CallOptions) { o.Timeout = d }
}

// OnProgress asks the server for progress (a progressToken in
// params._meta) and runs fn for each update, on the caller's goroutine, in
// order, before Request returns. If fn panics, the request is cancelled on
// the server and the panic continues in the caller.
func OnProgress(fn func(Progress)) RequestOption {
	return func(o *connection.CallOptions) { o.OnProgress = fn }
}

// ResetTimeoutOnProgress restarts the request's timeout at each progress
// update, so long-running work that reports progress does not time out.
func ResetTimeoutOnProgress() RequestOption {
	return func(o *connection.CallOptions) { o.ResetTimeoutOnProgress = true }
}

// MaxTotalTimeout caps the whole wait, whatever the progress.
func MaxTotalTimeout(d time.Duration) RequestOption {
	return func(o *connection.CallOptions) { o.MaxTotalTimeout = d }
}

func callOptions(opts []RequestOption) *connection.CallOptions {
	if len(opts) == 0 {
		return nil
	}
	o := new(connection.CallOptions)
	for _, opt := range opts {
		opt(o)
	}
	return o
}
