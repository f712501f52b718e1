package engine

import (
	"errors"
	"fmt"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
)

// What the engine ends a request or its stream with, besides the
// sentinels (internal/sentinel) snodo exports.
var (
	// errStreamPanicked: a request's Stream callback (set by package
	// subscription) panicked. The request ended with a local -32603
	// wrapping it (the server was sent notifications/cancelled); the
	// connection lives on.
	errStreamPanicked = errors.New("snodo: the Stream callback panicked")
	// errStreamCancelled ends a stream request (subscriptions/listen) that
	// the server cancelled with notifications/cancelled.
	errStreamCancelled = errors.New("server cancelled the stream")
)

// timeoutError is the local -32001; raise names the option that sets
// the limit that passed.
func timeoutError(method, what, raise string) *jsonrpc.Error {
	return jsonrpc.NewLocalError(jsonrpc.CodeTimeout,
		fmt.Sprintf("%s: no answer within %s; raise it with %s", method, what, raise),
		jsonrpc.ErrTimeout)
}

// How to raise each limit, for timeoutError.
const (
	raiseTimeout = "the Timeout request option or WithTimeout"
	raiseTotal   = "the MaxTotalTimeout request option"
)

// exitReason describes a server exit: status or signal, and the last
// lines of stderr when it is captured.
type exitReason struct {
	what   string // "server exited with status 3"
	stderr string
	cause  error // snodo.ErrServerExited or snodo.ErrStdoutClosed
	wait   error // what the server's Wait returned (an *exec.ExitError), or nil
}

func (e *exitReason) Error() string {
	if e.stderr != "" {
		return e.what + " (last stderr: " + e.stderr + ")"
	}
	return e.what
}

func (e *exitReason) Unwrap() []error {
	if e.wait == nil {
		return []error{e.cause}
	}
	return []error{e.cause, e.wait}
}

// notSentError is closed, the -32000 a stopping connection fails its
// requests with, for a request the server never read: it says so and
// wraps snodo.ErrNotSent too.
func notSentError(closed error) error {
	var e *jsonrpc.Error
	if !errors.As(closed, &e) {
		return closed
	}
	causes := append(append([]error(nil), e.Unwrap()...), sentinel.ErrNotSent)
	return jsonrpc.NewLocalError(e.Code, e.Message+" (the request was never read by the server; it is safe to send again)", causes...)
}

// queueFullError is the local error for a line refused at the bound.
func queueFullError(method string, max int) *jsonrpc.Error {
	return jsonrpc.NewLocalError(jsonrpc.CodeInternalError,
		fmt.Sprintf("%s: not sent: %d bytes already wait to be written to a server that is not reading its stdin; retry later, or raise WithMaxWriteQueue", method, max),
		sentinel.ErrWriteQueueFull)
}
