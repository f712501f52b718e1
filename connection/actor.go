package connection

import (
	"encoding/json"
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/handlers"
)

// connActor owns the connection's life: it watches the owner, takes exit
// signals, runs server-request handlers as its children, and on stopping
// fails every caller and closes the server's stdin. The request hot path
// does not pass through it (see docs/architecture.md).
type connActor struct {
	c *Conn
}

// Messages the reader goroutine sends the actor.
type (
	serverRequestMsg struct{ req *handlers.Request }
	serverCancelMsg  struct{ id json.RawMessage }
	// panicMsg makes the actor panic; tests use it to check that a panic
	// stops the connection cleanly.
	panicMsg struct{}
)

func (*serverRequestMsg) IgnoreDeadLetterLogging() {}
func (*serverCancelMsg) IgnoreDeadLetterLogging()  {}
func (*panicMsg) IgnoreDeadLetterLogging()         {}

// Receive handles one message. A panic stops the connection with
// actor.ReasonPanicked: the actor never restarts with empty tables while
// the child process lives on.
func (a *connActor) Receive(ctx protoactor.Context) {
	defer func() {
		if r := recover(); r != nil {
			a.c.cfg.Logger.Error("snodo: connection actor panicked; stopping the connection", "panic", r)
			a.c.stopSelf(ctx, fmt.Errorf("%w: %v", snodoactor.ReasonPanicked, r))
		}
	}()
	switch msg := ctx.Message().(type) {
	case *protoactor.Started:
		if a.c.cfg.Owner != nil {
			ctx.Watch(a.c.cfg.Owner)
		}
	case *protoactor.Terminated:
		if owner := a.c.cfg.Owner; owner != nil && msg.Who.Equal(owner) {
			a.c.stopSelf(ctx, fmt.Errorf("%w: actor %s terminated", ErrOwnerExited, owner.Id))
			return
		}
		a.c.disp.Receive(ctx)
	case *snodoactor.ExitSignal:
		a.c.stopSelf(ctx, msg.Reason)
	case *serverRequestMsg:
		a.c.disp.Dispatch(ctx, msg.req)
	case *serverCancelMsg:
		a.c.disp.Cancel(ctx, msg.id)
	case *inputsMsg:
		a.c.disp.Inputs(ctx, msg.ins)
	case *withdrawMsg:
		a.c.disp.Withdraw(ctx, msg.ins)
	case *panicMsg:
		panic("panic requested by a test")
	case *protoactor.Stopping:
		a.c.shutdown(ctx)
	case *protoactor.Stopped:
		a.c.actorStopped()
	default:
		a.c.disp.Receive(ctx)
	}
}
