package snodo

import (
	"context"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/listening"
)

// ListenCall is Listen as a message: sent with ctx.Request (or with
// ReplyTo) to the PID of a *Client, a supervisor.Client or a
// supervisor.Pool, it opens a subscription without blocking any mailbox
// while the server acknowledges it. The reply target (ReplyTo, else the
// sender) receives exactly one *ListenReply first, then, if it opened,
// the subscription's events as ListenTo delivers them: a
// *SubscriptionEvent per event, in order (restart markers included on a
// supervised client or pool), then one *SubscriptionEnded. The
// subscription watches the reply target and is cancelled on the server
// when it terminates; Close the ListenReply's Subscription to end it
// sooner.
type ListenCall struct {
	quiet
	Filter  Filter
	Tag     any            // returned in the ListenReply
	Options []ListenOption // MaxQueuedEvents, MaxQueuedEventBytes; the events go to the reply target
	ReplyTo *protoactor.PID
}

// ListenReply answers a *ListenCall, before any of its events.
// Subscription is what was opened (a supervised client's or a pool's
// follows restarts): Close it to cancel the subscription. Err says why it could not be opened, as Listen would
// return it; then no event and no SubscriptionEnded follow.
type ListenReply struct {
	quiet
	Tag          any
	Subscription *Subscription
	Err          error
	Origin       // the server that holds the subscription (see Origin)
}

// SubscribeResourceCall is SubscribeResource (or, with Unsubscribe,
// UnsubscribeResource) as a message, for legacy-era servers: the reply
// target receives one *Reply with its Tag (Result empty) once the server
// answered. The updates come through the WithNotificationHandler handler,
// as for the method.
type SubscribeResourceCall struct {
	quiet
	URI         string
	Unsubscribe bool
	Tag         any
	Options     []RequestOption
	ReplyTo     *protoactor.PID
}

// listenOpened has the subscription send the reply target its
// ListenReply once it is open, before its first event: sent after Listen
// returned, the reply could come after events already posted.
func listenOpened(tag any) ListenOption {
	return ListenOption{func(o *listening.Settings) error {
		o.Opened = func(sub, origin any) any {
			return &ListenReply{Tag: tag, Subscription: sub.(*Subscription), Origin: origin.(Origin)}
		}
		return nil
	}}
}

// resourceSubscriber is a Requester that also takes legacy resource
// subscriptions: *Client, supervisor.Client and supervisor.Pool are.
type resourceSubscriber interface {
	SubscribeResource(ctx context.Context, uri string, opts ...RequestOption) error
	UnsubscribeResource(ctx context.Context, uri string, opts ...RequestOption) error
}

func runListenCall(msg *ListenCall, to *protoactor.PID, listen ListenFunc) any {
	opts := append(append([]ListenOption(nil), msg.Options...), ListenTo(to), listenOpened(msg.Tag))
	// The subscription outlives the call: its owner is the reply target
	// (ListenTo watches it), not the call's ctx, which ends with the call.
	if err := listen(context.Background(), msg.Filter, opts...); err != nil {
		return &ListenReply{Tag: msg.Tag, Err: err}
	}
	return nil // the subscription sent the ListenReply before its events
}

func runSubscribeResourceCall(ctx context.Context, msg *SubscribeResourceCall, r resourceSubscriber) *Reply {
	var err error
	if msg.Unsubscribe {
		err = r.UnsubscribeResource(ctx, msg.URI, msg.Options...)
	} else {
		err = r.SubscribeResource(ctx, msg.URI, msg.Options...)
	}
	return &Reply{Tag: msg.Tag, Err: err}
}

// ListenFunc opens a subscription, as Client.Listen does; see
// CallHandler.Listen. It must honour ListenTo and
// the ListenReply the call's option asks for, which send the
// subscription's messages.
type ListenFunc func(ctx context.Context, f Filter, opts ...ListenOption) error
