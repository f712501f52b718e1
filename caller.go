package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"time"
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
//     server-request handler) and the bound on rounds. Each round is a new Request, so
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
	// first failure ends the round.
	// ctx and timeout (the call's Timeout option: 0 the default, negative
	// none) bound the wait. A nil Serve answers every request with -32601,
	// so the call fails with ErrInputRequest.
	Serve func(ctx context.Context, reqs []*ServerRequest, timeout time.Duration) ([]json.RawMessage, error)
	// MaxRounds bounds the rounds of one call; 0 means
	// DefaultMaxInputRounds.
	MaxRounds int
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
	return InputHandling{Serve: c.conn.ServeInputs, MaxRounds: c.mcp.maxRounds}
}
