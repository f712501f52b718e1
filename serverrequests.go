package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/dispatch"
	"github.com/snodo/snodo/internal/telemetry"
)

// serverRequests wraps the user's handler into the one every connection
// uses, whatever the era: ping is answered here (a liveness check must
// not depend on user code), everything else goes to user, and without a
// user handler it is answered with -32601. The same function fulfils the
// inputRequests of modern input_required results (mrtr.go).
func serverRequests(user ServerRequestHandler) ServerRequestHandler { return dispatch.Defaults(user) }

// errHandlerPanicked marks the span of a handler run that panicked.
var errHandlerPanicked = errors.New("the server-request handler panicked")

// observed is serverRequests with each run of the user's handler traced
// (a SERVER span) and counted (handlers running): the connection runs
// every server request and every input request of both eras through it.
func (c *Client) observed(user ServerRequestHandler) ServerRequestHandler {
	serve := serverRequests(user)
	if user == nil {
		return serve
	}
	return func(ctx context.Context, req *ServerRequest) (res any, err error) {
		if req.Method == "ping" {
			return serve(ctx, req)
		}
		ctx, span := c.serverRequestSpan(ctx, req)
		metering := c.meters.Live() // once: a provider set meanwhile must not unbalance the count
		var start time.Time
		measured := ctx // the ctx of the run's measurements: detached once, for all three
		if metering {
			measured = telemetry.Detached(ctx)
			c.meters.HandlerStarted(measured)
			start = time.Now()
		}
		var answered error // what the server is answered instead of a result, as the span and duration record it
		defer func() {
			if r := recover(); r != nil {
				c.served(measured, req.Method, span, metering, start, false, errHandlerPanicked) // answered -32603
				panic(r)
			}
			c.served(measured, req.Method, span, metering, start, ctx.Err() != nil, answered)
		}()
		res, err = serve(ctx, req)
		answered = err
		if err == nil && req.Method == handlers.MethodElicitation && (metering || span != nil && span.IsRecording()) {
			res, answered = checkedAnswer(req, res)
		}
		return res, err
	}
}

// checkedAnswer checks a handler's answer to elicitation/create as the
// connection checks every one before sending it
// (dispatch.CheckElicitAnswer: an accepted form must fit the requested
// schema), so that the run's span, which ends before the connection's
// check, and its duration record the -32603 the server gets for an
// answer refused. It returns the answer encoded (the connection sends
// those bytes, and checks them, as they are: the same verdict) and the
// error the server is answered with instead, nil when none.
func checkedAnswer(req *ServerRequest, res any) (any, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return res, err // the connection fails to encode it too: -32603
	}
	if wire, _ := dispatch.CheckElicitAnswer(req, b); wire != nil {
		return json.RawMessage(b), wire
	}
	return json.RawMessage(b), nil
}

// The typed server requests (the params a ServerRequestHandler decodes,
// req.Elicitation and req.Sampling, and the results it returns, in both
// eras), the server-to-client request methods and the elicitation modes
// and actions have one home, the handlers package: handlers.ElicitParams,
// handlers.ElicitResult, handlers.CreateMessageParams, handlers.Root,
// handlers.MethodElicitation, handlers.ElicitAccept, … .
