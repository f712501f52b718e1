package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error codes the library uses or recognises.
const (
	CodeParseError          = -32700
	CodeInvalidRequest      = -32600
	CodeMethodNotFound      = -32601
	CodeInvalidParams       = -32602
	CodeInternalError       = -32603
	CodeConnectionClosed    = -32000 // server exited, a write failed, or the connection closed
	CodeTimeout             = -32001 // the request timed out locally
	CodeResourceNotFound    = -32002 // legacy MCP: resources/read of an unknown URI
	CodeUnsupportedProtocol = -32022 // modern MCP: the requested protocol version is not supported
)

// Sentinels for errors.Is. They match only errors raised by this library,
// never an error object a server sent with the same code.
var (
	// ErrTimeout: the request's timeout expired before the server answered.
	ErrTimeout = errors.New("snodo: request timed out")
	// ErrConnectionClosed: the connection is gone (server exit, stdin write
	// failure, Close, owner exit or an exit signal).
	ErrConnectionClosed = errors.New("snodo: connection closed")
	// ErrInvalidParams: the params given to a call cannot go on the wire
	// (not valid JSON, not marshalable, or not an object where the
	// protocol needs one). Nothing was sent; the error is local (-32602).
	ErrInvalidParams = errors.New("snodo: invalid params")
)

// Error is a JSON-RPC error object. Handlers may build one to answer a
// server request with a specific error (&Error{Code: 4242, Message: "…"}).
//
// Errors raised locally (timeouts, a closed connection) are *Error values
// too, with the JSON-RPC code a caller would expect, but they also wrap a
// cause: errors.Is(err, ErrTimeout) is true only for a local timeout, never
// for a -32001 that came over the wire.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	causes []error // set only on errors raised locally
}

// ClosedError is the -32000 every waiting and later caller gets once a
// connection (or a supervisor, or a pool) has stopped for reason.
func ClosedError(reason error) *Error {
	return NewLocalError(CodeConnectionClosed, "connection closed: "+reason.Error(), ErrConnectionClosed, reason)
}

// NewLocalError returns an error raised by this library (not by a server)
// with the given code and message, wrapping causes for errors.Is/As.
func NewLocalError(code int, message string, causes ...error) *Error {
	return &Error{Code: code, Message: message, causes: causes}
}

// Error formats a server's error as "server error CODE: message" (with its
// data) and a local one as "snodo: message (code CODE)".
func (e *Error) Error() string {
	if e.causes != nil {
		return fmt.Sprintf("snodo: %s (code %d)", e.Message, e.Code)
	}
	if len(e.Data) > 0 {
		return fmt.Sprintf("server error %d: %s (data: %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("server error %d: %s", e.Code, e.Message)
}

// Unwrap returns the causes of a local error; nil for an error a server sent.
func (e *Error) Unwrap() []error { return e.causes }

// Local reports whether the error was raised by this library rather than
// received from the server.
func (e *Error) Local() bool { return e.causes != nil }
