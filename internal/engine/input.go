package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/dispatch"
)

// Messages a call that fulfils input requests sends the actor.
type (
	inputsMsg   struct{ ins []*dispatch.Input }
	withdrawMsg struct{ ins []*dispatch.Input }
)

func (*inputsMsg) IgnoreDeadLetterLogging()   {}
func (*withdrawMsg) IgnoreDeadLetterLogging() {}

// serveInputs runs the server-request handler for the input requests of
// one modern input_required result and returns their encoded results, in
// order. They run on the connection's one handler path: each in a child
// actor of the connection actor, taking a slot of the same bound
// (MaxServerRequests) as legacy server requests; over the bound they wait
// for a slot in arrival order.
//
// The wait ends with the first failure, a *dispatch.InputError (the other inputs
// are withdrawn or cancelled); with ctx; after timeout (0: the
// connection's Timeout; negative: none), a local -32001; or when the
// connection stops, a local -32000. A handler's ctx derives from ctx, so
// it keeps ctx's values and is cancelled when the wait ends early.
func (c *Conn) serveInputs(ctx context.Context, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error) {
	if timeout == 0 {
		timeout = c.cfg.Timeout
	}
	r := dispatch.NewRound(ctx, len(reqs))
	ins := make([]*dispatch.Input, len(reqs))
	for i, req := range reqs {
		ins[i] = &dispatch.Input{Ctx: r.Ctx(), Request: req, Reply: r.Reply(i)}
	}
	c.system.Root.Send(c.pid, &inputsMsg{ins: ins})
	results, err := r.Wait(ctx, timeout, c.stopped, c.closedErr)
	if err != nil {
		c.system.Root.Send(c.pid, &withdrawMsg{ins: ins})
	}
	return results, err
}
