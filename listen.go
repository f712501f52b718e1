package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/listening"
	"github.com/snodo/snodo/subscription"
)

// Filter selects the notifications a subscription asks for
// (subscriptions/listen "notifications"); Subscription.Acknowledged
// returns the subset the server agreed to honour. The zero value asks for
// nothing. It is the subscription engine's type, so its fields are listed
// here:
//
//	ToolsListChanged      bool     // notifications/tools/list_changed
//	PromptsListChanged    bool     // notifications/prompts/list_changed
//	ResourcesListChanged  bool     // notifications/resources/list_changed
//	ResourceSubscriptions []string // notifications/resources/updated for these URIs
type Filter = subscription.Filter

// Event is one notification delivered on a subscription. It is the
// subscription engine's type, so its fields are listed here:
//
//	Method string          // such as "notifications/tools/list_changed"
//	Params json.RawMessage // the raw params object, its _meta included
type Event = subscription.Event

// Subscription is an open subscriptions/listen stream, whoever serves it:
// Client.Listen, a supervised client's or a pool's (which re-sends it
// after a restart or moves it off a member that left, putting a
// supervisor.ResubscribedMethod marker event before the new server's
// events), or a remote client's (served by a host over NATS, kept alive
// by heartbeats). Its methods are safe for concurrent use; Close may be
// called any number of times.
type Subscription struct {
	impl listening.Impl
}

func init() {
	listening.Register(
		func(impl listening.Impl) any { return &Subscription{impl: impl} },
		func(s any) listening.Impl { return s.(*Subscription).impl },
		func(opts any) (listening.Settings, error) { return listenSettingsOf(opts.([]ListenOption)...) })
}

// ID is the listen request's JSON-RPC ID, which the server carries in
// every notification of the subscription; json.Marshal(ID()) is its wire
// form. A supervised subscription's changes with each re-subscription; a
// remote one's is its id between the client and the host.
func (s *Subscription) ID() int64 { return s.impl.ID() }

// Acknowledged is the subset of the requested filter the server agreed to
// honour. Types it left out are never delivered.
func (s *Subscription) Acknowledged() Filter { return s.impl.Acknowledged() }

// Events delivers the subscription's events in the order the server sent
// them, and is closed after the last one once the subscription ended
// (after Done: Err is final by then). With ListenTo it is closed at
// once: the actor gets the events. A reader that falls behind by more
// than the queue bound (MaxQueued) ends it
// with subscription.ErrQueueFull.
func (s *Subscription) Events() <-chan Event { return s.impl.Events() }

// Done is closed once the subscription has ended, whatever the cause.
func (s *Subscription) Done() <-chan struct{} { return s.impl.Done() }

// Err is why the subscription ended: nil while it runs and after a
// graceful end (the server answered the listen request); a -32000 *Error
// when the connection went away; the server's *Error when it answered the
// listen request with one; otherwise it wraps subscription.ErrClosed,
// subscription.ErrServerTeardown, subscription.ErrQueueFull or actor.ErrOwnerExited. A supervised one
// may also end with the supervisor's error wrapping supervisor.ErrGaveUp, a remote one with
// remote.ErrHostGone or remote.ErrHostEnded.
func (s *Subscription) Err() error { return s.impl.Err() }

// Close cancels the subscription: the server is sent
// notifications/cancelled for the listen request (Close does not wait for
// an answer to it), Err becomes subscription.ErrClosed unless the
// subscription had already ended, and Events is closed after the events
// already queued. Close returns once the subscription has ended; it always
// returns nil.
func (s *Subscription) Close() error { return s.impl.Close() }

// ErrListenUnsupported: the server has no subscriptions/listen (a legacy
// MCP server, 2025-11-25 or earlier). With such servers, receive the
// server's unsolicited list_changed notifications with
// WithNotificationHandler, and watch resources with SubscribeResource.
var ErrListenUnsupported = errors.New("snodo: the server does not support subscriptions/listen (it speaks a legacy MCP version; its list_changed notifications come unasked, to the client's notification handler)")

// ListenOption tunes one subscription. Build it with ListenTo or
// MaxQueued.
type ListenOption struct {
	set func(*listening.Settings) error
}

// listenSettingsOf applies opts in order; the first invalid one is an
// error.
func listenSettingsOf(opts ...ListenOption) (listening.Settings, error) {
	var s listening.Settings
	for _, o := range opts {
		if o.set == nil {
			continue
		}
		if err := o.set(&s); err != nil {
			return listening.Settings{}, err
		}
	}
	return s, nil
}

// ListenTo delivers the subscription's events to the actor pid, as
// *SubscriptionEvent messages and then one *SubscriptionEnded, instead of
// the Events channel. The subscription watches pid and is cancelled when
// it terminates. pid lives in the connection's actor system.
func ListenTo(pid *protoactor.PID) ListenOption {
	return ListenOption{func(o *listening.Settings) error {
		if pid == nil {
			return errors.New("ListenTo: nil PID")
		}
		o.Actor = pid
		return nil
	}}
}

// MaxQueued bounds the events waiting for a slow reader: at most events
// of them, and bytes of their params (an event arriving at an empty queue
// is always taken, however large). Past either bound the subscription
// ends with subscription.ErrQueueFull and is cancelled on the server.
// 0 keeps a bound's default: 1024 events, 16 MiB; a negative one is an
// error.
func MaxQueued(events, bytes int) ListenOption {
	return ListenOption{func(o *listening.Settings) error {
		if events < 0 || bytes < 0 {
			return fmt.Errorf("MaxQueued(%d, %d): a bound cannot be negative; 0 keeps its default", events, bytes)
		}
		if events > 0 {
			o.MaxQueue = events
		}
		if bytes > 0 {
			o.MaxQueueBytes = bytes
		}
		return nil
	}}
}

// Listen opens a subscriptions/listen stream for the notifications f asks
// for and returns once the server acknowledged it. ctx is the
// subscription's owner: when it is done, as on Close, the server is sent
// notifications/cancelled and Events closes. Events may be read on the
// same goroutine that makes other requests: delivery never blocks the
// connection. The wait for the acknowledgement is bounded by the
// connection's timeout (WithTimeout): past it the server is sent
// notifications/cancelled and Listen fails with a -32001 wrapping
// ErrTimeout. On a legacy-era server Listen fails with
// ErrListenUnsupported.
func (c *Client) Listen(ctx context.Context, f Filter, opts ...ListenOption) (*Subscription, error) {
	if c.legacy() {
		return nil, ErrListenUnsupported
	}
	set, err := listenSettingsOf(opts...)
	if err != nil {
		return nil, fmt.Errorf("snodo: %w", err)
	}
	// The actor's messages name the *Subscription Listen returns: they
	// wait until it is made (events may come as Open returns).
	outer, ready := new(Subscription), make(chan struct{})
	defer close(ready)
	message := func(_ *subscription.Subscription, ev *Event, err error) any {
		<-ready
		return subscriptionMessage(outer, ev, err, c.mcp.origin)
	}
	o := subscription.Options{Actor: set.Actor, MaxQueue: set.MaxQueue, MaxQueueBytes: set.MaxQueueBytes, AckTimeout: c.mcp.timeout,
		Logger: c.notes.logger, Message: message}
	if set.Opened != nil {
		o.First = func(*subscription.Subscription) any {
			<-ready
			return set.Opened(outer, c.mcp.origin)
		}
	}
	params, err := json.Marshal(struct {
		Notifications Filter `json:"notifications"`
	}{f})
	if err != nil {
		return nil, fmt.Errorf("snodo: cannot marshal the subscription filter: %w", err)
	}
	ctx = c.observeSubscription(ctx, &o)
	sub, err := subscription.Open(ctx, c.conn, params, c.encodedMeta(), o)
	var e *Error
	if errors.As(err, &e) && e.Code == CodeMethodNotFound && !e.Local() {
		return nil, fmt.Errorf("%w: %w", ErrListenUnsupported, err)
	}
	if err != nil {
		return nil, err
	}
	outer.impl = sub
	return outer, nil
}

// SubscribeResource asks a legacy-era server to send
// notifications/resources/updated whenever the resource at uri changes
// (the server must declare Capabilities().Resources.Subscribe). The
// updates arrive through the WithNotificationHandler handler
// (Notification.ResourceUpdated). In the modern era it fails with
// ErrSubscribeUnsupported.
//
// It is not one of the typed calls of Calls: the subscription belongs to
// the server process that took it, which sends the updates on its own
// connection. supervisor.Client (subscribing again after restarts) and
// supervisor.Pool (keeping each URI on one member) have it as methods of
// their own; a remote client has none, since the updates would reach the
// host, never the caller.
func (c *Client) SubscribeResource(ctx context.Context, uri string, opts ...RequestOption) error {
	return c.resourceSubscription(ctx, "resources/subscribe", uri, opts)
}

// UnsubscribeResource ends a SubscribeResource subscription (legacy era;
// ErrSubscribeUnsupported in the modern era).
func (c *Client) UnsubscribeResource(ctx context.Context, uri string, opts ...RequestOption) error {
	return c.resourceSubscription(ctx, "resources/unsubscribe", uri, opts)
}

func (c *Client) resourceSubscription(ctx context.Context, method, uri string, opts []RequestOption) error {
	if c.mcp.era == EraModern {
		return ErrSubscribeUnsupported
	}
	if uri == "" {
		return fmt.Errorf("snodo: %s: empty uri", method)
	}
	_, err := c.completeRequest(ctx, method, struct {
		URI string `json:"uri"`
	}{uri}, opts)
	return err
}
