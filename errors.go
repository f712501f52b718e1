package snodo

import "github.com/snodo/snodo/internal/jsonrpc"

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

// Sentinels for errors.Is. They match only errors raised by snodo. Why a
// connection stopped is told by the sentinels of the layer that stopped
// it: the transport's in package connection (connection.ErrServerExited,
// connection.ErrNotSent, …), the owner's in package actor
// (actor.ErrOwnerExited); a subscription's end by package subscription's
// (subscription.ErrQueueFull, …). docs/errors.md lists them all.
var (
	ErrTimeout          = jsonrpc.ErrTimeout          // a request's timeout expired
	ErrConnectionClosed = jsonrpc.ErrConnectionClosed // the connection is gone, for whatever reason
	ErrInvalidParams    = jsonrpc.ErrInvalidParams    // local -32602: the params cannot go on the wire (not JSON, not an object where one is needed); nothing was sent
)
