package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// child is the actor that owns one server request or input request. Its
// Receive never blocks: the handler runs on a goroutine started in
// Started, which posts the outcome back. So a stop — the connection's,
// which stops its children first — is handled at once even while the
// handler runs.
type child struct {
	cfg     *Config // the dispatcher's; read-only once dispatching starts
	req     *handlers.Request
	ctx     context.Context // the handler's; cancelled on cancel or stop
	cancel  context.CancelFunc
	deliver func(*outcome) // sends the answer: to the server, or to the waiting call
}

// outcome is the handler's answer, encoded, posted by the handler's
// goroutine to its child. A late one reaches a stopped child as a dead
// letter, which is expected and not logged.
type outcome struct {
	result json.RawMessage
	err    *jsonrpc.Error // what goes on the wire
	cause  error          // what the handler returned or why it failed, for a local caller
}

func (*outcome) IgnoreDeadLetterLogging() {}

// Receive delivers the answer unless the request was cancelled, then
// stops.
func (c *child) Receive(ctx protoactor.Context) {
	defer func() {
		// A panic here must not reach the supervisor: its default restart
		// would run Started, and so the handler, a second time.
		if r := recover(); r != nil {
			c.cfg.Logger.Error("snodo: server-request actor panicked; its request gets no answer",
				"method", c.req.Method, "id", string(c.req.ID), "panic", r)
			c.cancel()
			ctx.Stop(ctx.Self())
		}
	}()
	switch m := ctx.Message().(type) {
	case *protoactor.Started:
		go c.run(ctx.ActorSystem(), ctx.Self())
	case *outcome:
		// ctx.Err is the one flag for "cancelled" (by the server, or by
		// the call waiting for an input request) and "the connection is
		// stopping": each cancels it before anything else, so a cancelled
		// request is never answered.
		if c.ctx.Err() == nil {
			c.deliver(m)
		} else {
			c.dropped()
		}
		ctx.Stop(ctx.Self())
	case *protoactor.Stopping:
		c.cancel()
	}
}

// run calls the handler and posts its outcome to the child, even a
// cancelled one: the child stopping is what frees the slot. After the
// connection stopped, the child is gone and the outcome a dead letter.
func (c *child) run(system *protoactor.ActorSystem, self *protoactor.PID) {
	system.Root.Send(self, call(c.cfg, c.ctx, c.req))
}

// call runs the handler, turning a panic into -32603, and checks an
// elicitation answer against the requested schema. It is the one place
// where a handler runs, whatever the era, and Observe (telemetry) wraps
// it here.
func call(cfg *Config, ctx context.Context, req *handlers.Request) (out *outcome) {
	end := func(error, bool) {}
	if cfg.Observe != nil {
		ctx, end = cfg.Observe(ctx, req)
	}
	settled := false
	defer func() {
		if r := recover(); r != nil {
			cfg.Logger.Error("snodo: server-request handler panicked; answered -32603",
				"method", req.Method, "id", string(req.ID), "panic", r, "stack", string(debug.Stack()))
			out = &outcome{
				err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: "internal error: the client's handler for " + req.Method + " panicked"},
				cause: fmt.Errorf("the server-request handler panicked: %v", r),
			}
			if !settled {
				end(out.cause, true)
			}
		}
	}()
	res, err := cfg.Handler(ctx, req)
	out = encode(res, err)
	if out.err == nil {
		if wire, cause := CheckElicitAnswer(req, out.result); wire != nil {
			cfg.Logger.Warn("snodo: refused the handler's answer to elicitation/create; answered -32603 instead",
				"id", string(req.ID), "error", cause)
			out = &outcome{err: wire, cause: cause}
		}
	}
	settled = true
	var answered error
	if out.err != nil {
		answered = out.cause
	}
	end(answered, false)
	return out
}

func (c *child) dropped() {
	c.cfg.Logger.Debug("snodo: dropped the answer to a server request that was cancelled or outlived its connection",
		"method", c.req.Method, "id", string(c.req.ID))
}

// encode turns what a handler returned into the answer to send. It is the
// one place where results are encoded, whatever the era.
func encode(res any, err error) *outcome {
	if err != nil {
		var e *jsonrpc.Error
		if errors.As(err, &e) && e != nil {
			return &outcome{err: e, cause: err}
		}
		return &outcome{err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}, cause: err}
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		e := &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("internal error: the client's handler returned a result that cannot be marshalled: %v", merr)}
		return &outcome{err: e, cause: fmt.Errorf("the handler's result cannot be marshalled: %w", merr)}
	}
	return &outcome{result: b}
}
