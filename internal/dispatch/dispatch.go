package dispatch

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// DefaultMaxWaiting is the number of input requests that may wait for a
// slot of the bound when Config.MaxWaiting is zero.
const DefaultMaxWaiting = 4096

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
	Request *handlers.Request
	// Reply receives the answer: the encoded result with a nil error, or
	// the handler's error (the *jsonrpc.Error it returned, its own error,
	// or one describing a panic or a result that cannot be marshalled).
	// It is called at most once, from any goroutine, and must not block.
	Reply func(result json.RawMessage, err error)
}

// Responder writes the answer to a server request: result (raw JSON) when
// err is nil, otherwise err. id nil means a null id. It must not block and
// may be called from any goroutine.
type Responder func(id json.RawMessage, result json.RawMessage, err *jsonrpc.Error)

// Config configures a Dispatcher. NewDispatcher copies it.
type Config struct {
	// Handler answers requests; nil answers every request with -32601.
	Handler handlers.Func
	// Max bounds the handlers running at once; a request over the bound
	// is answered with -32603 without running the handler. The
	// connection gives its MaxServerRequests, whose default is
	// limits.MaxServerRequests.
	Max int
	// MaxWaiting bounds the input requests waiting for a slot; one more
	// is answered at once with an error. Zero means DefaultMaxWaiting.
	MaxWaiting int
	// Respond writes answers; required.
	Respond Responder
	// Logger receives panics, rejected requests and dropped answers;
	// nil discards them.
	Logger *slog.Logger
	// Refused, when set, is told of each request refused over Max, and
	// each input refused over MaxWaiting (for metrics). It runs on the
	// connection actor and must not block.
	Refused func()
	// Observe, when set, wraps each run of Handler (the connection's
	// telemetry): call calls it before the run with the run's ctx and
	// runs the handler with the ctx it returns; the function it returns
	// is called once the answer is settled (encoded, and an elicitation
	// answer checked), with the error the server is answered with
	// instead of a result (nil for a result) or panicked set.
	Observe func(ctx context.Context, req *handlers.Request) (context.Context, func(answered error, panicked bool))
}
