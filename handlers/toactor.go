package handlers

import (
	"context"
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
)

// RequestMessage is what an actor receives from a handler made by
// ToActor: one server request to answer. The actor answers by calling
// Reply exactly once, from its Receive or from any goroutine, at once or
// later; it need not (and cannot) use ctx.Respond.
//
// Ctx is the handler's context: it is done when the server cancels the
// request or the connection stops, after which the answer is dropped, so
// an actor doing long work for it should watch Ctx.Done().
type RequestMessage struct {
	Ctx     context.Context
	Request *Request
	reply   chan answer // capacity 1: Reply never blocks
}

type answer struct {
	result any
	err    error
}

// Reply answers the request: result is marshalled as the JSON-RPC result
// when err is nil; err is sent as in Func (a *jsonrpc.Error as is,
// anything else as -32603). Only the first call counts; later ones, and
// calls after Ctx is done, are ignored. Safe from any goroutine.
func (m *RequestMessage) Reply(result any, err error) {
	select {
	case m.reply <- answer{result: result, err: err}:
	default: // already answered
	}
}

// ToActor returns a handler that delivers every server request to the
// actor pid as a *RequestMessage and answers with what the actor replies.
// It lets a service keep its server-request logic inside its own actor
// (often the connection's owner). The handler waits for the reply or for
// its ctx, never for a protoactor Future.
//
// The actor must reply to every RequestMessage. The handler watches it
// while it waits: if it stops without replying (or with the message still
// in its mailbox), the request is answered with -32603 at once. A pid
// that is not running when a request arrives is answered with -32603 too,
// and so is every request when system or pid is nil (the error says
// which).
func ToActor(system *protoactor.ActorSystem, pid *protoactor.PID) Func {
	if system == nil || pid == nil {
		missing := map[bool]string{true: "nil system", false: "nil pid"}[system == nil]
		return func(context.Context, *Request) (any, error) {
			return nil, fmt.Errorf("handlers.ToActor was given a %s: pass the actor system and the PID of the actor that answers server requests", missing)
		}
	}
	return func(ctx context.Context, req *Request) (any, error) {
		if _, ok := system.ProcessRegistry.Get(pid); !ok {
			return nil, fmt.Errorf("the actor %s that answers server requests is not running", pid.Id)
		}
		m := &RequestMessage{Ctx: ctx, Request: req, reply: make(chan answer, 1)}
		gone := make(chan struct{})
		stop := snodoactor.WatchOwner(system, pid, func() { close(gone) })
		defer stop()
		system.Root.Send(pid, m)
		select {
		case a := <-m.reply:
			return a.result, a.err
		case <-gone:
			select {
			case a := <-m.reply: // replied, then stopped
				return a.result, a.err
			default:
			}
			return nil, fmt.Errorf("the actor %s that answers server requests stopped without replying", pid.Id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
