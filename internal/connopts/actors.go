package connopts

import (
	"context"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/origins"
	"github.com/snodo/snodo/subscription"
)

// CallServer is what the root's config lends for CallHandler (K is
// snodo.Calls, L snodo.ListenOption).
type CallServer[K, L any] interface {
	// CallHandler returns the Handle of a new handler; see the function
	// CallHandler.
	CallHandler(calls K, origin origins.Origin, listen func(ctx context.Context, f subscription.Filter, opts ...L) error) func(protoactor.Context) bool
}

// DeadCalls is what the root's config lends for AnswerDeadCalls.
type DeadCalls interface {
	// AnswerDeadCalls; see the function AnswerDeadCalls.
	AnswerDeadCalls(sys *protoactor.ActorSystem, unwrap func(msg any) (call any, server string, ok bool))
}

// CallHandler returns the Handle of a new handler of the call messages
// (snodo.Call, ToolCall, ListenCall) an actor receives (O is
// snodo.Option, which names the root's config that does the work; K
// snodo.Calls, L snodo.ListenOption), run on calls off the actor's
// mailbox: origin goes on replies no client served, and listen (nil:
// ListenCall is refused) runs the ListenCall messages. Handle reports
// whether the message was a call message. The supervisor and pool
// actors call it in their default case.
func CallHandler[O ~func(PC) error, K, L any, PC interface {
	*C
	CallServer[K, L]
}, C any](calls K, origin origins.Origin, listen func(ctx context.Context, f subscription.Filter, opts ...L) error) func(protoactor.Context) bool {
	var c C
	return PC(&c).CallHandler(calls, origin, listen)
}

// AnswerDeadCalls makes sure a call message sent to an actor of sys that
// is gone is still answered, with a -32000 (O is snodo.Option). unwrap,
// when not nil, finds the call message inside a message that carries one
// (a servers.To) and the server it names: a router registers it for its
// system. Idempotent per system; a later non-nil unwrap replaces one.
func AnswerDeadCalls[O ~func(PC) error, PC interface {
	*C
	DeadCalls
}, C any](sys *protoactor.ActorSystem, unwrap func(msg any) (call any, server string, ok bool)) {
	var c C
	PC(&c).AnswerDeadCalls(sys, unwrap)
}
