package snodo

import (
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
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

// Sentinels for errors.Is. They match only errors raised by snodo. Every
// reason a call, a connection or a subscription can end with is here, in
// this one package (docs/errors.md lists them): no other package exports
// a second name for any of them.
var (
	ErrTimeout          = jsonrpc.ErrTimeout          // a request's timeout expired
	ErrConnectionClosed = jsonrpc.ErrConnectionClosed // the connection is gone, for whatever reason
	ErrInvalidParams    = jsonrpc.ErrInvalidParams    // local -32602: the params cannot go on the wire (not JSON, not an object where one is needed); nothing was sent
)

// Why a connection stopped. Callers see a -32000 *Error that wraps
// ErrConnectionClosed and one of these (or the reason given to Exit), and
// so does the client's Err, so errors.Is tells them apart.
var (
	// ErrClosed: Close was called (on the client, a supervised client, a
	// pool or a remote client).
	ErrClosed = sentinel.ErrClosed
	// ErrServerExited: the server process exited (or, in memory, its
	// serve function returned). When it exited with a non-zero status or a
	// signal, the error also wraps the *exec.ExitError.
	ErrServerExited = sentinel.ErrServerExited
	// ErrStdinClosed: a write to the server failed because it closed its
	// stdin.
	ErrStdinClosed = sentinel.ErrStdinClosed
	// ErrStdoutClosed: the server closed its stdout but kept running.
	ErrStdoutClosed = sentinel.ErrStdoutClosed
	// ErrNotReading: the server stopped reading its stdin while the
	// connection's own lines (answers to its requests, refusals,
	// cancellations) piled up past twice WithMaxWriteQueue.
	ErrNotReading = sentinel.ErrNotReading
	// ErrSessionExpired: the Streamable HTTP server forgot the session (a
	// 404, or a 400 naming it, for the session's Mcp-Session-Id) and the
	// new session the connection started in its place could not serve the
	// request. A new connection opens a new session.
	ErrSessionExpired = sentinel.ErrSessionExpired
	// ErrServerUnreachable: the HTTP endpoint cannot be reached (nothing
	// listens there, or its name does not resolve).
	ErrServerUnreachable = sentinel.ErrServerUnreachable
	// ErrStreamEnded: the server ended the SSE stream of the HTTP+SSE
	// transport (2024-11-05), which is its session: it stopped or
	// restarted. A new connection opens a new stream.
	ErrStreamEnded = sentinel.ErrStreamEnded
	// ErrOwnerExited: the owner went away: Connect's ctx was done, or the
	// WithOwner actor terminated. It also ends subscriptions and actors
	// that snodo manages.
	ErrOwnerExited = sentinel.ErrOwnerExited
	// ErrActorStopped: the connection actor (or another actor snodo
	// manages) was stopped with Stop or Poison, without a reason.
	ErrActorStopped = sentinel.ErrActorStopped
	// ErrActorPanicked: the connection actor (or another actor snodo
	// manages) panicked and was stopped: a bug, please report it.
	ErrActorPanicked = sentinel.ErrActorPanicked
)

// Why one request failed while its connection lives on, or how it failed.
var (
	// ErrNotSent: the request never reached the server (it was not
	// written, or the server went away without reading it): sending it
	// again cannot run it twice. The -32000 of a request the stopping
	// connection failed unread wraps it besides the reason.
	ErrNotSent = sentinel.ErrNotSent
	// ErrWriteQueueFull: a request or notification was refused, unsent,
	// with a local -32603, because WithMaxWriteQueue bytes already wait to
	// be written to a server that reads slowly or not at all. The
	// connection lives on.
	ErrWriteQueueFull = sentinel.ErrWriteQueueFull
	// ErrStreamBroken: the HTTP answer to a request (an SSE stream, or a
	// JSON body) ended before the response and could not be resumed. The
	// request failed with a local -32603 wrapping it and may be sent
	// again; the connection lives on.
	ErrStreamBroken = sentinel.ErrStreamBroken
	// ErrNotJSONRPC: the HTTP server answered a request with something
	// that is no JSON-RPC message, or with a content type the transport
	// does not know. The request failed with a local -32603 wrapping it;
	// the connection lives on.
	ErrNotJSONRPC = sentinel.ErrNotJSONRPC
	// ErrMessageTooLarge: a message in the HTTP answer to a request went
	// past WithMaxLineBytes. The request failed with a local -32603
	// wrapping it (and nothing else did); the connection lives on.
	ErrMessageTooLarge = sentinel.ErrMessageTooLarge
)

// Why a subscription ended, for errors.Is on its Err. A graceful end,
// the server answering the listen request, leaves Err nil.
var (
	// ErrSubscriptionClosed: the subscription's Close was called.
	ErrSubscriptionClosed = sentinel.ErrSubscriptionClosed
	// ErrSubscriptionTeardown: the server sent notifications/cancelled for
	// the listen request. Listen again to resume receiving events.
	ErrSubscriptionTeardown = sentinel.ErrSubscriptionTeardown
	// ErrSubscriptionQueueFull: events arrived faster than they were taken
	// and the queue passed its bound (MaxQueued); the subscription was
	// cancelled on the server.
	ErrSubscriptionQueueFull = sentinel.ErrSubscriptionQueueFull
)
