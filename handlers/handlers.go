package handlers

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// DefaultMaxWaiting is the number of input requests that may wait for a
// slot of the bound when Config.MaxWaiting is zero.
const DefaultMaxWaiting = 4096

// Request is a request the server sent to the client, or one input
// request of a modern input_required result. A handler may keep it after
// returning; nothing else refers to it.
//
// ID is raw JSON. For a server request (legacy era) it is the server's
// JSON-RPC id, a number or a string. For an input request (modern era)
// it is the request's key in the result's inputRequests object, as a JSON
// string ("\"name\"" for the key name): the answer travels back under that
// key in inputResponses.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage // a JSON object or array, or nil when absent
}

// Input is one input request of a modern input_required result, sent to
// the Dispatcher by the call that received the result and waits for the
// answer. It runs exactly like a server request — a child actor, a slot
// of the same bound, the same panic recovery and result encoding — but
// over the bound it waits for a slot, in arrival order, instead of being
// refused: in the modern era there is no per-request error to send.
type Input struct {
	// Ctx is the waiting call's context. The handler's context derives
	// from it, so when it is done (the call's ctx, its timeout) the
	// handler is cancelled, or the waiting input skipped, and Reply is
	// not called.
	Ctx     context.Context
	Request *Request
	// Reply receives the answer: the encoded result with a nil error, or
	// the handler's error (the *jsonrpc.Error it returned, its own error,
	// or one describing a panic or a result that cannot be marshalled).
	// It is called at most once, from any goroutine, and must not block.
	Reply func(result json.RawMessage, err error)
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
	// MaxWaiting bounds the input requests waiting for a slot; one more
	// is answered at once with an error. Zero means DefaultMaxWaiting.
	MaxWaiting int
	// Respond writes answers; required.
	Respond Responder
	// Logger receives panics, rejected requests and dropped answers;
	// nil discards them.
	Logger *slog.Logger
}
