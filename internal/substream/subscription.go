package substream

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/bytebound"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/internal/telemetry"
	"github.com/snodo/snodo/subscription"
)

// Filter and Event are package subscription's: what a user sees of a
// subscription.
type (
	Filter = subscription.Filter
	Event  = subscription.Event
)

// Options tune one subscription. The zero value delivers events on the
// Events channel with a queue of 1024 events.
type Options struct {
	// MaxQueue bounds the events waiting for the reader (the Events
	// channel's capacity, about 40 bytes a slot, allocated up front).
	// Passing it ends the subscription with snodo.ErrSubscriptionQueueFull. Default 1024;
	// negative is an error.
	MaxQueue int
	// MaxQueueBytes bounds the events waiting for the reader by the
	// size of their params, with the same policy as MaxQueue: passing it
	// ends the subscription with snodo.ErrSubscriptionQueueFull. An event arriving at an
	// empty queue is always taken, however large. Default 16 MiB;
	// negative is an error.
	MaxQueueBytes int
	// Actor, when set, receives each event and then the end as the
	// messages Message builds, instead of the Events channel. The
	// subscription watches it: when it terminates, the subscription is
	// cancelled.
	Actor *protoactor.PID
	// System is the actor system Actor lives in; default: the
	// connection's.
	System *protoactor.ActorSystem
	// AckTimeout bounds Open's wait for the server's acknowledgement (the
	// owner ctx cannot bound it: it lives as long as the subscription).
	// Past it the listen request is cancelled on the server and Open
	// fails with a local -32001 *jsonrpc.Error wrapping jsonrpc.ErrTimeout.
	// Default 60 s (a connection's default request timeout); negative:
	// only ctx bounds the wait.
	AckTimeout time.Duration
	// Logger receives the notifications dropped for arriving before the
	// acknowledgement; default: discard.
	Logger *slog.Logger
	// Post delivers to Actor, on the subscription's own goroutine and in
	// order: one call per event (ev the event, err nil), then one for the
	// end (ev nil, err what Err returns; not made when Open failed). It
	// sends Actor the message it builds (the caller's message types are
	// its own); it may wait for room in a bounded mailbox while the queue
	// behind it fills up to its bound. Required with Actor.
	Post func(s *Subscription, ev *Event, err error)
	// PostFirst, with Actor, is called first, once the server
	// acknowledged the subscription and before any event, to send Actor
	// the message that says so; nil: none. It is not called when Open
	// fails.
	PostFirst func(s *Subscription)

	// moduleOptions holds what only snodo's own packages set (the
	// hooks its telemetry observes the subscription with), out of this
	// package's documentation.
	moduleOptions
}

// moduleOptions is embedded in Options: its fields are set by the root
// package (o.Ended = …) and, their type being internal, by no one else.
type moduleOptions = telemetry.SubscriptionHooks

func (o Options) withDefaults() (Options, error) {
	if o.MaxQueue < 0 {
		return o, fmt.Errorf("snodo: subscription queue bound %d must be positive", o.MaxQueue)
	}
	if o.MaxQueueBytes < 0 {
		return o, fmt.Errorf("snodo: subscription queue bound Options.MaxQueueBytes %d must be positive", o.MaxQueueBytes)
	}
	if o.Actor != nil && o.Post == nil {
		return o, fmt.Errorf("snodo: a subscription with Options.Actor needs Options.Post to send it its messages")
	}
	if o.MaxQueue == 0 {
		o.MaxQueue = limits.MaxQueue
	}
	if o.MaxQueueBytes == 0 {
		o.MaxQueueBytes = limits.MaxQueueBytes
	}
	if o.AckTimeout == 0 {
		o.AckTimeout = limits.Timeout // a connection's default request timeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Subscription is one open subscriptions/listen stream. Its methods are
// safe for concurrent use; Close may be called any number of times.
type Subscription struct {
	opts   Options
	id     atomic.Int64
	cancel context.CancelCauseFunc // ends the listen request; never blocks

	acked chan struct{} // closed by the sink on the acknowledgement
	done  chan struct{} // closed once the subscription has ended

	mu        sync.Mutex
	ackFilter Filter
	isAcked   bool
	abandoned bool       // Open gave up waiting for the acknowledgement: a late one is ignored
	ended     bool       // events is closed; the sink does nothing more
	full      bool       // the queue passed its bound
	events    chan Event // the bounded queue
	err       error

	// bytes counts the params bytes of the events waiting in events.
	// Guarded by mu.
	bytes bytebound.Counter

	stopWatch func() // ends the watch of opts.Actor; nil without one
}

// closedEvents is what Events returns when an actor receives the events.
var closedEvents = func() chan Event { ch := make(chan Event); close(ch); return ch }()

// ID is the listen request's JSON-RPC ID, which the server carries in
// every notification of the subscription; json.Marshal(ID()) is its wire
// form.
func (s *Subscription) ID() int64 { return s.id.Load() }

// Acknowledged is the subset of the requested filter the server agreed to
// honour. Types it left out are never delivered.
func (s *Subscription) Acknowledged() Filter {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.ackFilter
	f.ResourceSubscriptions = append([]string(nil), f.ResourceSubscriptions...)
	return f
}

// Events delivers the subscription's events in the order the server sent
// them, and is closed after the last one once the subscription ended.
// With Options.Actor it is closed at once: the actor gets the events.
func (s *Subscription) Events() <-chan Event {
	if s.opts.Actor != nil {
		return closedEvents
	}
	return s.events
}

// Done is closed once the subscription has ended, whatever the cause.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is why the subscription ended: nil while it runs and after a
// graceful end; see the package doc for the others.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close cancels the subscription: the server is sent notifications/cancelled
// for the listen request (Close does not wait for any answer to it), Err
// becomes snodo.ErrSubscriptionClosed unless the subscription had already ended, and Events
// is closed after the events already queued. Close returns once the
// subscription has ended; it always returns nil.
func (s *Subscription) Close() error {
	s.end(sentinel.ErrSubscriptionClosed)
	<-s.done
	return nil
}

// end cancels the listen request with reason; the first reason wins. It
// never blocks, so the sink and the watcher actor may call it.
func (s *Subscription) end(reason error) {
	s.cancel(&localEnd{err: reason})
}
