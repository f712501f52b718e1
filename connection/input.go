package connection

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/dispatch"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Messages a call that fulfils input requests sends the actor.
type (
	inputsMsg   struct{ ins []*dispatch.Input }
	withdrawMsg struct{ ins []*dispatch.Input }
)

func (*inputsMsg) IgnoreDeadLetterLogging()   {}
func (*withdrawMsg) IgnoreDeadLetterLogging() {}

// InputError is the failure of one input request: Index is its place in
// the slice given to ServeInputs, Err what its handler returned (or why
// it could not run).
type InputError struct {
	Index int
	Err   error
}

// Error is the message of what the handler returned.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns what the handler returned, for errors.Is and errors.As.
func (e *InputError) Unwrap() error { return e.Err }

// ServeInputs runs the server-request handler for the input requests of
// one modern input_required result and returns their encoded results, in
// order. They run on the connection's one handler path: each in a child
// actor of the connection actor, taking a slot of the same bound
// (MaxServerRequests) as legacy server requests; over the bound they wait
// for a slot in arrival order.
//
// The wait ends with the first failure, an *InputError (the other inputs
// are withdrawn or cancelled); with ctx; after timeout (0: the
// connection's Timeout; negative: none), a local -32001; or when the
// connection stops, a local -32000. A handler's ctx derives from ctx, so
// it keeps ctx's values and is cancelled when the wait ends early.
func (c *Conn) ServeInputs(ctx context.Context, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error) {
	if timeout == 0 {
		timeout = c.cfg.Timeout
	}
	ictx, cancel := context.WithCancel(ctx)
	defer cancel() // cancels the handlers still running when the wait ends early
	type reply struct {
		i      int
		result json.RawMessage
		err    error
	}
	replies := make(chan reply, len(reqs)) // each input replies at most once: never blocks
	ins := make([]*dispatch.Input, len(reqs))
	for i, r := range reqs {
		ins[i] = &dispatch.Input{Ctx: ictx, Request: r, Reply: func(result json.RawMessage, err error) {
			replies <- reply{i, result, err}
		}}
	}
	var timerC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timerC = t.C
	}
	c.system.Root.Send(c.pid, &inputsMsg{ins: ins})
	results := make([]json.RawMessage, len(reqs))
	for range reqs {
		var err error
		select {
		case r := <-replies:
			if r.err == nil {
				results[r.i] = r.result
				continue
			}
			err = &InputError{Index: r.i, Err: r.err}
		case <-ctx.Done():
			err = fmt.Errorf("snodo: waiting for the handler of %d input request(s): %w", len(reqs), ctx.Err())
		case <-timerC:
			err = jsonrpc.NewLocalError(jsonrpc.CodeTimeout,
				fmt.Sprintf("the handlers of %d input request(s) did not answer within %s; raise it with the Timeout request option or WithTimeout",
					len(reqs), timeout), jsonrpc.ErrTimeout)
		case <-c.stopped:
			return nil, c.closedErr()
		}
		c.system.Root.Send(c.pid, &withdrawMsg{ins: ins})
		return nil, err
	}
	return results, nil
}
