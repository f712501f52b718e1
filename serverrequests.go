package snodo

import (
	"context"
	"errors"
	"time"

	"github.com/snodo/snodo/internal/dispatch"
	"github.com/snodo/snodo/internal/mcpmethod"
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

// observeHandler traces (a SERVER span) and counts (handlers running,
// mcp.server.operation.duration) each run of the user's handler: the
// connection's one handler path (dispatch's call) calls it before the
// run, for every server request and input request of both eras, and the
// function it returns once the answer is settled, after the check of an
// elicitation answer, so a refused answer shows as the -32603 the server
// gets. ping, answered without user code, is not observed.
func (c *Client) observeHandler(ctx context.Context, req *ServerRequest) (context.Context, func(answered error, panicked bool)) {
	if req.Method == mcpmethod.Ping {
		return ctx, func(error, bool) {}
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
	return ctx, func(answered error, panicked bool) {
		if panicked {
			c.served(measured, req.Method, span, metering, start, false, errHandlerPanicked) // answered -32603
			return
		}
		c.served(measured, req.Method, span, metering, start, ctx.Err() != nil, answered)
	}
}

// The typed server requests (the params a ServerRequestHandler decodes,
// req.Elicitation and req.Sampling, and the results it returns, in both
// eras) have one home, the handlers package: handlers.ElicitParams,
// handlers.ElicitResult, handlers.CreateMessageParams, handlers.Root, … .
// Methods, elicitation modes and actions are strings as the
// specification spells them ("elicitation/create", "accept").
