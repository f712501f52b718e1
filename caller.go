package snodo

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/snodo/snodo/internal/calls"
)

// requester is the raw-request side of an MCP client: the one part that
// differs between a connection (*Client), a supervised connection, a pool
// and a client on another machine. Calls builds every typed call on top
// of it, so each of them offers the whole client surface and a new typed
// call is written once. Its contract is internal/calls' Requester's; Era
// picks the method Ping sends.
type requester = calls.Requester[RequestOption, Era]

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
//
// Its value is the internal state every kind of client builds its Calls
// from (the requester and the input handling), so that package
// supervisor, package remote and the snodo command build theirs with the
// compiler checking each call.
type Calls calls.Calls[RequestOption, Era]

// newCalls returns the typed calls over r, completing input_required
// rounds as in says.
func newCalls(r requester, in func() calls.InputHandling) Calls { return Calls(calls.New(r, in)) }

// errNoRequester: a zero Calls was called.
var errNoRequester = errors.New("snodo: these typed calls belong to no client (a zero Calls); call them on the Client, supervisor.Client, Pool or remote.Client that embeds them")

func (c Calls) requester() requester {
	if r := calls.Calls[RequestOption, Era](c).Requester(); r != nil {
		return r
	}
	return noRequester{}
}

// inputHandling is how c completes input_required rounds.
func (c Calls) inputHandling() calls.InputHandling {
	if in := calls.Calls[RequestOption, Era](c).Input(); in != nil {
		return in()
	}
	return calls.InputHandling{}
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
func (c *Client) inputHandling() calls.InputHandling {
	return calls.InputHandling{Serve: c.lent.ServeInputs, MaxRounds: c.mcp.maxRounds}
}
