package connection

import (
	"errors"
	"fmt"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/serverproc"
)

// Why a connection stopped. Callers see a -32000 *jsonrpc.Error that wraps
// jsonrpc.ErrConnectionClosed and one of these (or an exit reason given to
// snodo.Exit), so errors.Is tells them apart.
var (
	// ErrClosed: Close was called.
	ErrClosed = serverproc.ErrClosed
	// ErrServerExited: the server process exited.
	ErrServerExited = serverproc.ErrServerExited
	// ErrStdinClosed: a write to the server failed because it closed its stdin.
	ErrStdinClosed = serverproc.ErrStdinClosed
	// ErrStdoutClosed: the server closed its stdout but kept running.
	ErrStdoutClosed = serverproc.ErrStdoutClosed
	// ErrNotReading: the server stopped reading its stdin while the
	// connection's own lines (answers to its requests, refusals,
	// cancellations) piled up past twice Config.MaxWriteQueue.
	ErrNotReading = serverproc.ErrNotReading
	// ErrSessionExpired: the Streamable HTTP server forgot the session
	// (legacy era: 404, or a 400 naming it, for the session's
	// Mcp-Session-Id) and the new session the connection started in its
	// place could not serve the request. A new connection opens a new
	// session.
	ErrSessionExpired = serverproc.ErrSessionExpired
	// ErrServerUnreachable: the Streamable HTTP endpoint cannot be reached
	// (nothing listens there, or its name does not resolve). A request
	// that met it fails with a -32000 wrapping it, and so does the
	// connection.
	ErrServerUnreachable = serverproc.ErrServerUnreachable
	// ErrStreamEnded: the server ended the SSE stream of the HTTP+SSE
	// transport (2024-11-05), which is its session: it stopped or
	// restarted. A new connection opens a new stream.
	ErrStreamEnded = serverproc.ErrStreamEnded
	// ErrStreamBroken: the HTTP answer to a request (an SSE stream, or a
	// JSON body) ended before the response and could not be resumed
	// (modern era: streams are never resumed). The request failed with a
	// local -32603 wrapping it and may be sent again; the connection
	// lives on.
	ErrStreamBroken = errors.New("snodo: the HTTP answer ended before the response")
	// ErrNotJSONRPC: the Streamable HTTP server answered a request with
	// something that is no JSON-RPC message, or with a content type the
	// transport does not know. The request failed with a local -32603
	// wrapping it; the connection lives on.
	ErrNotJSONRPC = errors.New("snodo: the HTTP answer is not a JSON-RPC message")
	// ErrMessageTooLarge: a message in the HTTP answer to a request went
	// past Config.MaxLineBytes. The request failed with a local -32603
	// wrapping it (and nothing else did); the connection lives on.
	ErrMessageTooLarge = errors.New("snodo: a message from the server is too large")
	// ErrWriteQueueFull: a request or notification was refused, unsent,
	// because Config.MaxWriteQueue bytes already wait to be written to a
	// server that reads slowly or not at all. The connection lives on.
	ErrWriteQueueFull = errors.New("snodo: write queue full")
	// ErrNotSent: the request never reached the server (it was not
	// written, or the server went away without reading it): sending it
	// again cannot run it twice. It is wrapped, besides the reason, by the
	// -32000 of a request the stopping connection failed unread.
	ErrNotSent = errors.New("snodo: the request was never read by the server")
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
	cause  error // ErrServerExited or ErrStdoutClosed
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
// wraps ErrNotSent too.
func notSentError(closed error) error {
	var e *jsonrpc.Error
	if !errors.As(closed, &e) {
		return closed
	}
	causes := append(append([]error(nil), e.Unwrap()...), ErrNotSent)
	return jsonrpc.NewLocalError(e.Code, e.Message+" (the request was never read by the server; it is safe to send again)", causes...)
}

// queueFullError is the local error for a line refused at the bound.
func queueFullError(method string, max int) *jsonrpc.Error {
	return jsonrpc.NewLocalError(jsonrpc.CodeInternalError,
		fmt.Sprintf("%s: not sent: %d bytes already wait to be written to a server that is not reading its stdin; retry later, or raise WithMaxWriteQueue", method, max),
		ErrWriteQueueFull)
}
