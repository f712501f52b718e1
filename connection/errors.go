package connection

import (
	"errors"
	"fmt"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// ExitCause names why a connection stopped in one low-cardinality word,
// for metrics and logs: "closed", "server_exited", "stdin_closed",
// "stdout_closed", "owner_exited", "panicked", or "stopped" (any other
// reason: Stop, Poison, or actor.Exit with a reason of the caller's).
func ExitCause(reason error) string {
	switch {
	case errors.Is(reason, ErrClosed):
		return "closed"
	case errors.Is(reason, ErrServerExited):
		return "server_exited"
	case errors.Is(reason, ErrStdinClosed):
		return "stdin_closed"
	case errors.Is(reason, ErrStdoutClosed):
		return "stdout_closed"
	case errors.Is(reason, ErrNotReading):
		return "not_reading"
	case errors.Is(reason, snodoactor.ErrOwnerExited):
		return "owner_exited"
	case errors.Is(reason, snodoactor.ErrPanicked):
		return "panicked"
	}
	return "stopped"
}

// Why a connection stopped. Callers see a -32000 *jsonrpc.Error that wraps
// jsonrpc.ErrConnectionClosed and one of these (or an exit reason given to
// actor.Exit), so errors.Is tells them apart.
var (
	// ErrClosed: Close was called.
	ErrClosed = errors.New("connection closed by the client")
	// ErrServerExited: the server process exited.
	ErrServerExited = errors.New("server exited")
	// ErrStdinClosed: a write to the server failed because it closed its stdin.
	ErrStdinClosed = errors.New("server closed its stdin")
	// ErrStdoutClosed: the server closed its stdout but kept running.
	ErrStdoutClosed = errors.New("server closed its stdout")
	// ErrNotReading: the server stopped reading its stdin while the
	// connection's own lines (answers to its requests, refusals,
	// cancellations) piled up past twice Config.MaxWriteQueue.
	ErrNotReading = errors.New("server is not reading its stdin")
	// ErrWriteQueueFull: a request or notification was refused, unsent,
	// because Config.MaxWriteQueue bytes already wait to be written to a
	// server that reads slowly or not at all. The connection lives on.
	ErrWriteQueueFull = errors.New("snodo: write queue full")
	// errStreamCancelled ends a stream request (subscriptions/listen) that
	// the server cancelled with notifications/cancelled.
	errStreamCancelled = errors.New("server cancelled the stream")
)

// timeoutError is the local -32001.
func timeoutError(method string, what string) *jsonrpc.Error {
	return jsonrpc.NewLocalError(jsonrpc.CodeTimeout,
		fmt.Sprintf("%s: no answer within %s; raise it with the Timeout request option or WithTimeout", method, what),
		jsonrpc.ErrTimeout)
}

// exitReason describes a server exit: status or signal, and the last
// lines of stderr when it is captured.
type exitReason struct {
	what   string // "server exited with status 3"
	stderr string
	cause  error // ErrServerExited or ErrStdoutClosed
}

func (e *exitReason) Error() string {
	if e.stderr != "" {
		return e.what + " (last stderr: " + e.stderr + ")"
	}
	return e.what
}

func (e *exitReason) Unwrap() error { return e.cause }

// queueFullError is the local error for a line refused at the bound.
func queueFullError(method string, max int) *jsonrpc.Error {
	return jsonrpc.NewLocalError(jsonrpc.CodeInternalError,
		fmt.Sprintf("%s: not sent: %d bytes already wait to be written to a server that is not reading its stdin; retry later, or raise WithMaxWriteQueue", method, max),
		ErrWriteQueueFull)
}
