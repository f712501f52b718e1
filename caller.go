package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/seam"
)

// requester is the raw-request side of an MCP client: the one part that
// differs between a connection (*Client), a supervised connection, a pool
// and a client on another machine. Calls builds every typed call on top
// of it, so each of them offers the whole client surface and a new typed
// call is written once. The contract of Request is internal/seam's
// NewCalls'; Era picks the method Ping sends.
type requester interface {
	Request(ctx context.Context, method string, params any, opts ...RequestOption) (json.RawMessage, error)
	Era() Era
}

// Calls is every typed MCP call (ListTools, CallTool, ReadResource,
// GetPrompt, Complete, Ping, …) on top of the raw requests of the client
// it belongs to: *Client, supervisor.Client, supervisor.Pool and
// remote.Client embed it, so each offers the whole surface.
//
// Each call goes through its client's Request, so in the modern era it
// carries the required _meta, and request options (Timeout, OnProgress…)
// apply to every request the call sends. Its errors are Request's: a
// *Error the server sent, a local -32001 (ErrTimeout) or -32000
// (ErrConnectionClosed), or ctx's error. The calls add their own: a
// result that does not decode (an error naming the method), a list that
// repeats a cursor or runs past MaxPages pages, and the input_required
// failures (ErrTooManyInputRounds, ErrUnknownResultType, ErrInputRequest).
// A zero Calls, outside any client, fails every call.
type Calls struct {
	r  requester
	in func() seam.InputHandling // nil: input requests are answered -32601
}

// newCalls returns the typed calls over r, completing input_required
// rounds as in says.
func newCalls(r requester, in func() seam.InputHandling) Calls { return Calls{r: r, in: in} }

// errNoRequester: a zero Calls was called.
var errNoRequester = errors.New("snodo: these typed calls belong to no client (a zero Calls); call them on the Client, supervisor.Client, Pool or remote.Client that embeds them")

func (c Calls) requester() requester {
	if c.r == nil {
		return noRequester{}
	}
	return c.r
}

// inputHandling is how c completes input_required rounds.
func (c Calls) inputHandling() seam.InputHandling {
	if c.in == nil {
		return seam.InputHandling{}
	}
	return c.in()
}

// noRequester is the requester of a zero Calls.
type noRequester struct{}

func (noRequester) Request(context.Context, string, any, ...RequestOption) (json.RawMessage, error) {
	return nil, errNoRequester
}
func (noRequester) Era() Era { return "" }

// inputHandling answers input requests on the connection's one handler
// path (the WithServerRequestHandler handler in child actors of the
// connection, under the WithMaxServerRequests bound) and bounds the rounds
// with WithMaxInputRounds.
func (c *Client) inputHandling() seam.InputHandling {
	return seam.InputHandling{Serve: func(ctx context.Context, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error) {
		return connseam.ServeInputs(c.conn, ctx, reqs, timeout)
	}, MaxRounds: c.mcp.maxRounds}
}

func init() {
	seam.RegisterCalls(
		func(r any, in func() seam.InputHandling) Calls {
			req, _ := r.(requester)
			return newCalls(req, in)
		},
		func(opts []RequestOption) seam.RequestSettings {
			s := settingsOf(opts...)
			return seam.RequestSettings{Timeout: s.Timeout, OnProgress: toConnProgress(s.OnProgress),
				ResetTimeoutOnProgress: s.ResetTimeoutOnProgress, MaxTotalTimeout: s.MaxTotalTimeout, Idempotent: s.Idempotent}
		},
		func(c Calls) func() seam.InputHandling { return c.inputHandling },
	)
}
