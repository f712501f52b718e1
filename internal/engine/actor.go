package engine

import (
	"encoding/json"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/handlers"
)

// receive is the connection actor's Receive, under its life.Life (internal/life)
// (conn.go), which watches the owner, takes exit signals and turns a
// panic into a stop with snodo.ErrActorPanicked: the actor never restarts
// with empty tables while the child process lives on. The actor runs
// server-request handlers as its children and, on stopping, fails every
// caller and closes the server's stdin. The request hot path does not
// pass through it (see docs/architecture.md).
func (c *Conn) receive(ctx protoactor.Context) {
	switch msg := ctx.Message().(type) {
	case *serverRequestMsg:
		c.disp.Dispatch(ctx, msg.req)
	case *serverCancelMsg:
		c.disp.Cancel(ctx, msg.id)
	case *inputsMsg:
		c.disp.Inputs(ctx, msg.ins)
	case *withdrawMsg:
		c.disp.Withdraw(ctx, msg.ins)
	case *protoactor.Stopping:
		c.shutdown(ctx)
	case *protoactor.Stopped:
		c.actorStopped()
	default:
		if c.cfg.OnMessage != nil && c.cfg.OnMessage(ctx) {
			return
		}
		c.disp.Receive(ctx) // a handler child's Terminated
	}
}

// Messages the reader goroutine sends the actor.
type (
	serverRequestMsg struct{ req *handlers.Request }
	serverCancelMsg  struct{ id json.RawMessage }
)

func (*serverRequestMsg) IgnoreDeadLetterLogging() {}
func (*serverCancelMsg) IgnoreDeadLetterLogging()  {}
