package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/snodo/snodo/internal/jsonrpc"
	"time"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/dispatch"
)

// Requester is the raw-request side of an MCP client: the one part that
// differs between a connection (*Client), a supervised connection, a pool
// and a client on another machine. Calls builds every typed call on top
// of it, so each of them offers the whole client surface and a new typed
// call is written once.
//
// The contract:
//
//   - Request sends one JSON-RPC request and returns its raw result. It
//     is raw: an "input_required" result is returned as it is, never
//     completed (Calls does that). params may be nil, a json.RawMessage,
//     or anything json.Marshal accepts; in the modern era the required
//     _meta is added by whatever speaks to the server. It honours the
//     RequestSettings of opts (SettingsOf): Timeout, OnProgress (run on
//     the caller's goroutine, in order, before Request returns),
//     ResetTimeoutOnProgress, MaxTotalTimeout, and Idempotent where it
//     can retry. Errors are a *Error (the server's, or a local one:
//     -32001 wrapping ErrTimeout, -32000 wrapping ErrConnectionClosed) or
//     ctx's error. It is safe for concurrent use.
//   - Era is the MCP era of the server(s) behind it, EraModern or
//     EraLegacy. Calls uses it to pick the method Ping sends.
//   - InputHandling says how Calls completes input_required rounds: how
//     one round's input requests are answered (the caller's
//     server-request handler; ServeInputsWith builds that from a plain
//     handler) and the bound on rounds. Each round is a new Request, so
//     the rounds of one call may reach different servers of a pool:
//     modern servers keep no state between rounds (it travels in
//     requestState).
type Requester interface {
	Request(ctx context.Context, method string, params any, opts ...RequestOption) (json.RawMessage, error)
	Era() Era
	InputHandling() InputHandling
}

// InputHandling is how typed calls complete multi-round-trip
// (input_required) results; see Requester.
type InputHandling struct {
	// Serve answers the input requests of one round and returns their
	// results (the JSON each handler returned) in the same order. The
	// first failure ends the round as an *InputError naming the request.
	// ctx and timeout (the call's Timeout option: 0 the default, negative
	// none) bound the wait. A nil Serve answers every request with -32601,
	// so the call fails with ErrInputRequest.
	Serve func(ctx context.Context, reqs []*ServerRequest, timeout time.Duration) ([]json.RawMessage, error)
	// MaxRounds bounds the rounds of one call; 0 means
	// DefaultMaxInputRounds.
	MaxRounds int
}

// InputError says which input request of a round failed, and why.
type InputError struct {
	Index int   // in the round's requests
	Err   error // the handler's error, or its panic
}

// Error is Err's message.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *InputError) Unwrap() error { return e.Err }

// ServeInputsWith is an InputHandling.Serve that runs h for every request
// of a round at once, on goroutines of its own, for a Requester that has
// no connection to run them on (a remote client, say). A panic in h is an
// error, and so is an accepted elicitation form that does not fit its
// schema (ElicitParams.Check), as on a connection. A nil h answers every
// request with -32601. The first failure
// ends the round at once; so do ctx and timeout (when positive: past it,
// a local -32001 wrapping ErrTimeout), even for a handler that ignores
// its ctx, which is cancelled as the round ends.
func ServeInputsWith(h ServerRequestHandler) func(context.Context, []*ServerRequest, time.Duration) ([]json.RawMessage, error) {
	h = serverRequests(h)
	return func(ctx context.Context, reqs []*ServerRequest, timeout time.Duration) ([]json.RawMessage, error) {
		var expired <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			expired = t.C
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // the handlers still running when the round ends
		type reply struct {
			i      int
			result json.RawMessage
			err    error
		}
		replies := make(chan reply, len(reqs)) // never blocks a handler's goroutine
		for i, req := range reqs {
			go func() {
				result, err := answer(ctx, h, req)
				replies <- reply{i, result, err}
			}()
		}
		results := make([]json.RawMessage, len(reqs))
		for range reqs {
			select {
			case r := <-replies:
				if r.err != nil {
					return nil, &InputError{Index: r.i, Err: r.err}
				}
				results[r.i] = r.result
			case <-ctx.Done():
				return nil, fmt.Errorf("snodo: waiting for the handler of %d input request(s): %w", len(reqs), ctx.Err())
			case <-expired:
				return nil, jsonrpc.NewLocalError(CodeTimeout,
					fmt.Sprintf("the handlers of %d input request(s) did not answer within %s; raise it with the Timeout request option", len(reqs), timeout),
					ErrTimeout)
			}
		}
		return results, nil
	}
}

// answer runs h for one request, turning a panic into an error.
func answer(ctx context.Context, h ServerRequestHandler, req *ServerRequest) (result json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the server-request handler panicked: %v", r)
		}
	}()
	res, err := h(ctx, req)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("the handler's result cannot be marshalled: %w", err)
	}
	if _, refused := dispatch.CheckElicitAnswer(req, b); refused != nil {
		return nil, refused
	}
	return b, nil
}

// Calls is every typed MCP call (ListTools and the iterators, CallTool,
// ReadResource, GetPrompt, Complete, Ping, …) on top of a Requester,
// with input_required rounds completed by the requester's
// InputHandling. *Client, supervisor.Client and supervisor.Pool embed
// it; build one for your own Requester with NewCalls.
//
// Each call goes through the Requester's Request, so in the modern era it
// carries the required _meta, and request options (Timeout, OnProgress…)
// apply to every request the call sends. Its errors are Request's: a
// *Error the server sent, a local -32001 (ErrTimeout) or -32000
// (ErrConnectionClosed), or ctx's error. The calls add their own: a
// result that does not decode (an error naming the method), a list that
// repeats a cursor or runs past MaxPages pages, and the input_required
// failures (ErrTooManyInputRounds, ErrUnknownResultType, ErrInputRequest).
type Calls struct{ r Requester }

// NewCalls returns the typed calls over r. Over a nil r (or in a zero
// Calls) every call fails with ErrNoRequester.
func NewCalls(r Requester) Calls { return Calls{r: r} }

// ErrNoRequester: a Calls was built without a Requester (NewCalls(nil),
// or a zero Calls, such as one in a zero Client); build it with NewCalls
// and the client, pool or requester it should call.
var ErrNoRequester = errors.New("snodo: the typed calls have no Requester; build them with NewCalls(r), or use the Client, supervisor.Client or Pool they belong to")

func (c Calls) requester() Requester {
	if c.r == nil {
		return noRequester{}
	}
	return c.r
}

// noRequester is the Requester of a Calls built without one.
type noRequester struct{}

func (noRequester) Request(context.Context, string, any, ...RequestOption) (json.RawMessage, error) {
	return nil, ErrNoRequester
}
func (noRequester) Era() Era                     { return 0 }
func (noRequester) InputHandling() InputHandling { return InputHandling{} }

// InputHandling answers input requests on the connection's one handler
// path (the WithServerRequestHandler handler in child actors of the
// connection, under the WithMaxServerRequests bound) and bounds the rounds
// with WithMaxInputRounds.
func (c *Client) InputHandling() InputHandling {
	return InputHandling{Serve: c.serveInputs, MaxRounds: c.mcp.maxRounds}
}

func (c *Client) serveInputs(ctx context.Context, reqs []*ServerRequest, timeout time.Duration) ([]json.RawMessage, error) {
	results, err := c.conn.ServeInputs(ctx, reqs, timeout)
	var ie *connection.InputError
	if errors.As(err, &ie) {
		return nil, &InputError{Index: ie.Index, Err: ie.Err}
	}
	return results, err
}
