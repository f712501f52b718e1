package snodo

import (
	"context"
	"errors"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Connected is the message ConnectTo sends when Connect has finished:
// Client is set on success, Err otherwise.
type Connected struct {
	quiet
	Client *Client
	Err    error
}

// ConnectTo is Connect for actors: it returns at once and sends the
// outcome to pid as a *Connected message, so an actor can connect from its
// Receive without blocking its mailbox for the era negotiation. The
// connection is owned by pid (WithOwner) and runs on system unless opts
// say otherwise. If pid has stopped by the time the connection is ready,
// the connection closes by itself (its owner is gone).
//
// Mistakes that leave nobody to tell — a nil ctx, system or pid — are
// returned at once and nothing is started; every other outcome, errors
// included, arrives as the message.
func ConnectTo(ctx context.Context, system *protoactor.ActorSystem, pid *protoactor.PID, command string, args []string, opts ...Option) error {
	switch {
	case ctx == nil:
		return errors.New("snodo: ConnectTo: nil context.Context; pass context.Background() or a ctx that bounds the connect")
	case system == nil:
		return errors.New("snodo: ConnectTo: nil actor system; pass the system pid lives in (ctx.ActorSystem() in Receive)")
	case pid == nil:
		return errors.New("snodo: ConnectTo: nil PID; pass the actor that receives *Connected (ctx.Self() in Receive)")
	}
	opts = append([]Option{WithActorSystem(system), WithOwner(pid)}, opts...)
	go func() {
		c, err := Connect(ctx, command, args, opts...)
		system.Root.Send(pid, &Connected{Client: c, Err: err})
	}()
	return nil
}
