package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/subscription"
)

// ResubscribedMethod is the Method of the marker event a supervised
// subscription delivers after re-sending its subscriptions/listen to a
// restarted server. Events the old server would have sent during the gap
// are lost: re-read what the subscription watches (tools/list,
// resources/read…) when it arrives. Its Params are
// {"resubscriptions": N, "reason": "server exited with status 1", "subscriptionId": ID}.
const ResubscribedMethod = "snodo/resubscribed"

// Subscription is a subscriptions/listen stream that survives restarts:
// after each one it is re-sent with the same filter, and Events carries a
// ResubscribedMethod marker before the new server's events. Its methods
// are safe for concurrent use; Close may be called any number of times.
type Subscription struct {
	c      *Client
	filter snodo.Filter
	opts   []snodo.ListenOption
	owner  context.Context // Listen's ctx

	ctx    context.Context // owner, or Close
	cancel context.CancelFunc
	events chan snodo.Event
	done   chan struct{}

	mu     sync.Mutex
	inner  *snodo.Subscription
	resubs int
	closed bool
	err    error
}

// Listen opens a subscription on the current server (waiting for a
// restart, or failing fast, like Request) and returns once the server
// acknowledged it. ctx is its owner, as for snodo.Client.Listen. Events
// go to the Events channel; snodo.ListenTo is not supported here.
func (c *Client) Listen(ctx context.Context, f snodo.Filter, opts ...snodo.ListenOption) (*Subscription, error) {
	var probe subscription.Options
	for _, opt := range opts {
		if err := opt(&probe); err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
	}
	if probe.Actor != nil {
		return nil, errors.New("supervisor: ListenTo is not supported on a supervised subscription; read Events and forward them to the actor")
	}
	c.s.inflight.Add(1)
	inner, cl, err := c.s.listen(ctx, f, opts, nil, !c.s.cfg.failFast)
	c.s.inflight.Add(-1)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Subscription{
		c: c, filter: f, opts: opts, owner: ctx,
		ctx: sctx, cancel: cancel,
		events: make(chan snodo.Event),
		done:   make(chan struct{}),
		inner:  inner,
	}
	go s.run(inner, cl)
	return s, nil
}

// listen opens a subscription on a connection other than prev.
func (st *state) listen(ctx context.Context, f snodo.Filter, opts []snodo.ListenOption, prev *snodo.Client, wait bool) (*snodo.Subscription, *snodo.Client, error) {
	for {
		cl, err := st.acquire(ctx, subscription.Method, prev, wait, 0)
		if err != nil {
			return nil, nil, err
		}
		inner, err := cl.Listen(ctx, f, opts...)
		if err != nil && lostConnection(err) && wait {
			prev = cl // it died under us: wait for the next one
			continue
		}
		return inner, cl, err
	}
}

// ID is the current listen request's JSON-RPC ID; it changes with each
// re-subscription.
func (s *Subscription) ID() int64 { return s.current().ID() }

// Acknowledged is what the current server agreed to honour.
func (s *Subscription) Acknowledged() snodo.Filter { return s.current().Acknowledged() }

// Resubscriptions counts the re-subscriptions after restarts.
func (s *Subscription) Resubscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resubs
}

// Events delivers the events in order, a ResubscribedMethod marker after
// each restart, and is closed once the subscription has ended. Delivery
// is unbuffered past the inner subscription's queue: a reader that falls
// behind by more than that queue (snodo.MaxQueuedEvents) ends it with
// snodo.ErrQueueFull.
func (s *Subscription) Events() <-chan snodo.Event { return s.events }

// Done is closed once the subscription has ended.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is why the subscription ended: nil while it runs and after a
// graceful end; snodo.ErrSubscriptionClosed after Close; the owner's
// end, a server teardown or a full queue as for snodo.Subscription; a
// -32000 wrapping ErrClosed or the *GaveUpError when supervision ended.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
	default:
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close cancels the subscription on the server and returns once it has
// ended. It always returns nil.
func (s *Subscription) Close() error {
	s.mu.Lock()
	s.closed = true
	inner := s.inner
	s.mu.Unlock()
	s.cancel()
	_ = inner.Close()
	<-s.done
	return nil
}

func (s *Subscription) current() *snodo.Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner
}

// run forwards events and re-subscribes after restarts until the
// subscription ends for another reason.
func (s *Subscription) run(inner *snodo.Subscription, cl *snodo.Client) {
	defer close(s.done)
	defer close(s.events)
	defer s.cancel()
	for {
		if !s.forward(inner) {
			s.end(inner, snodo.ErrSubscriptionClosed)
			return
		}
		ended := inner.Err()
		if !lostConnection(ended) || s.isClosed() {
			s.end(inner, ended)
			return
		}
		next, ncl, err := s.c.s.listen(s.ctx, s.filter, s.opts, cl, true)
		if err != nil {
			s.end(inner, err)
			return
		}
		s.mu.Lock()
		s.inner, s.resubs = next, s.resubs+1
		n := s.resubs
		s.mu.Unlock()
		inner, cl = next, ncl
		params, _ := json.Marshal(map[string]any{"resubscriptions": n, "reason": exitWords(ended), "subscriptionId": next.ID()})
		select {
		case s.events <- snodo.Event{Method: ResubscribedMethod, Params: params}:
		case <-s.ctx.Done():
		}
	}
}

// forward copies inner's events until it ends (true) or the subscription
// is closed or its owner is done (false).
func (s *Subscription) forward(inner *snodo.Subscription) bool {
	for ev := range inner.Events() {
		select {
		case s.events <- ev:
		case <-s.ctx.Done():
			_ = inner.Close()
			return false
		}
	}
	<-inner.Done()
	return true
}

func (s *Subscription) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// end records why the subscription ended. Close wins; an owner that went
// away while re-subscribing reads as the owner's end.
func (s *Subscription) end(inner *snodo.Subscription, err error) {
	_ = inner.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		s.err = snodo.ErrSubscriptionClosed
	case s.owner.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || err == snodo.ErrSubscriptionClosed):
		s.err = fmt.Errorf("%w: the context given to Listen is done: %w", snodo.ErrOwnerExited, context.Cause(s.owner))
	default:
		s.err = err
	}
}
