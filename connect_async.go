package snodo

import (
	"context"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Connected is the message ConnectTo sends when Connect has finished:
// Client is set on success, Err otherwise.
type Connected struct {
	Client *Client
	Err    error
}

// IgnoreDeadLetterLogging keeps a result for an actor that is gone out of
// the dead-letter log.
func (*Connected) IgnoreDeadLetterLogging() {}

// ConnectTo is Connect for actors: it returns at once and sends the
// outcome to pid as a *Connected message, so an actor can connect from its
// Receive without blocking its mailbox for the era negotiation. The
// connection is owned by pid (WithOwner) and runs on system unless opts
// say otherwise. If pid has stopped by the time the connection is ready,
// the connection closes by itself (its owner is gone).
func ConnectTo(ctx context.Context, system *protoactor.ActorSystem, pid *protoactor.PID, command string, args []string, opts ...Option) {
	opts = append([]Option{WithActorSystem(system), WithOwner(pid)}, opts...)
	go func() {
		c, err := Connect(ctx, command, args, opts...)
		system.Root.Send(pid, &Connected{Client: c, Err: err})
	}()
}
