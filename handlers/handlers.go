package handlers

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// Request is a request the server sent to the client. A handler may keep
// it after returning; nothing else refers to it.
type Request struct {
	ID     json.RawMessage // the server's id, raw JSON (a number or a string)
	Method string
	Params json.RawMessage // a JSON object or array, or nil when absent
}

// Func answers one server request. A returned value is marshalled with
// encoding/json as the result; a returned *jsonrpc.Error (snodo.Error) is
// sent as that error, code, message and data; any other error, or a panic,
// is answered with -32603.
//
// Each call runs on its own goroutine, up to Config.Max at once. ctx is
// cancelled when the server cancels the request (notifications/cancelled)
// or the connection stops; the answer is then never sent, so a handler
// should return as soon as ctx is done. One that does not still never
// delays the connection's stop, but it keeps its slot of the bound until
// it returns.
type Func func(ctx context.Context, req *Request) (any, error)

// Responder writes the answer to a server request: result (raw JSON) when
// err is nil, otherwise err. id nil means a null id. It must not block and
// may be called from any goroutine.
type Responder func(id json.RawMessage, result json.RawMessage, err *jsonrpc.Error)

// Config configures a Dispatcher. NewDispatcher copies it.
type Config struct {
	// Handler answers requests; nil answers every request with -32601.
	Handler Func
	// Max bounds the handlers running at once; a request over the bound
	// is answered with -32603 without running the handler. The
	// connection gives its MaxServerRequests, whose default is
	// connection.DefaultMaxServerRequests.
	Max int
	// Respond writes answers; required.
	Respond Responder
	// Logger receives panics, rejected requests and dropped answers;
	// nil discards them.
	Logger *slog.Logger
}
