package snodo

import (
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Error is a JSON-RPC error object: one a server sent, one a handler
// returns to answer a server request (&snodo.Error{Code: 4242, Message:
// "…"}), or one raised locally. Tell local ones apart with errors.Is:
// errors.Is(err, ErrTimeout) is true only for a local timeout, never for a
// -32001 that came over the wire.
//
// Error has the fields Code int, Message string and Data json.RawMessage,
// and these methods (it is an alias of the wire layer's type, which is
// internal, so they are listed here):
//
//	func (e *Error) Error() string   // "server error <code>: <message>", or "snodo: <message> (code <code>)" when local
//	func (e *Error) Local() bool     // raised by snodo, never sent by the server
//	func (e *Error) Unwrap() []error // a local error's causes, for errors.Is
type Error = jsonrpc.Error

// JSON-RPC error codes.
const (
	CodeConnectionClosed    = jsonrpc.CodeConnectionClosed    // -32000: server exited, stdin write failed, or the connection closed
	CodeTimeout             = jsonrpc.CodeTimeout             // -32001: the request timed out (local)
	codeResourceNotFound    = jsonrpc.CodeResourceNotFound    // -32002: resources/read of an unknown URI (legacy servers)
	codeUnsupportedProtocol = jsonrpc.CodeUnsupportedProtocol // -32022: the server does not speak the requested version
	codeParseError          = jsonrpc.CodeParseError          // -32700
	codeInvalidRequest      = jsonrpc.CodeInvalidRequest      // -32600
	CodeMethodNotFound      = jsonrpc.CodeMethodNotFound      // -32601
	CodeInvalidParams       = jsonrpc.CodeInvalidParams       // -32602
	CodeInternalError       = jsonrpc.CodeInternalError       // -32603
)

// NewLocalError returns an error raised on this side of the wire, as
// snodo's own are, with code and message, wrapping causes for errors.Is:
// give ErrConnectionClosed with CodeConnectionClosed and ErrTimeout with
// CodeTimeout so callers can tell it from a server's. For Requester
// implementations.
func NewLocalError(code int, message string, causes ...error) *Error {
	return jsonrpc.NewLocalError(code, message, causes...)
}

// ClosedError is the -32000 every caller gets once a connection, a
// supervisor or a pool has stopped for reason: it wraps
// ErrConnectionClosed and reason.
func ClosedError(reason error) *Error { return jsonrpc.ClosedError(reason) }

// Sentinels for errors.Is. ErrTimeout and ErrConnectionClosed match only
// errors raised by snodo; the others tell why a connection stopped.
var (
	ErrTimeout          = jsonrpc.ErrTimeout          // a request's timeout expired
	ErrConnectionClosed = jsonrpc.ErrConnectionClosed // the connection is gone, for whatever reason
	ErrInvalidParams    = jsonrpc.ErrInvalidParams    // local -32602: the params cannot go on the wire (not JSON, not an object where one is needed); nothing was sent

	ErrClosed       = connection.ErrClosed       // Close was called
	ErrServerExited = connection.ErrServerExited // the server process exited
	ErrStdinClosed  = connection.ErrStdinClosed  // the server closed its stdin (a write failed)
	ErrStdoutClosed = connection.ErrStdoutClosed // the server closed its stdout and lives on
	ErrNotReading   = connection.ErrNotReading   // the server stopped reading while answers to its requests piled up past twice WithMaxWriteQueue

	// ErrWriteQueueFull: a request or notification was refused before it
	// was sent because WithMaxWriteQueue bytes already wait to be written
	// to a server that is not reading; the connection lives on.
	ErrWriteQueueFull = connection.ErrWriteQueueFull

	// ErrNotSent: the request never reached the server (it was not
	// written, or the server went away without reading it): sending it
	// again cannot run it twice. A -32000 wraps it besides the reason the
	// connection stopped; a supervisor sends such a call to the next
	// server, Idempotent or not.
	ErrNotSent = connection.ErrNotSent

	ErrOwnerExited = snodoactor.ErrOwnerExited // the owner (a context or an actor) went away
	ErrStopped     = snodoactor.ErrStopped     // the connection actor was stopped without a reason
	ErrPanicked    = snodoactor.ErrPanicked    // the connection actor panicked
)
