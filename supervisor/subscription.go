package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/listening"
)

// listenMethod is the request a subscription sends.
const listenMethod = "subscriptions/listen"

// ResubscribedMethod is the Method of the marker event a supervised
// subscription delivers after re-sending its subscriptions/listen to a
// restarted server (on a legacy-era server: its resources/subscribe). Events the old server would have sent during the gap
// are lost: re-read what the subscription watches (tools/list,
// resources/read…) when it arrives. Its Params are
// {"resubscriptions": N, "reason": "server exited with status 1", "subscriptionId": ID}.
const ResubscribedMethod = "snodo/resubscribed"

// supervised serves a *snodo.Subscription that survives restarts: after
// each one it is re-sent with the same filter, and Events (or the
// ListenTo actor) gets a ResubscribedMethod marker before the new
// server's events. It is held by one member (Member): a pool's
// subscription follows that member's restarts, and when the member leaves
// the pool (Shrink, or it gave up) it moves to another member, with the
// same marker.
//
// Its End's Err is why it ended: nil after a graceful end;
// snodo.ErrSubscriptionClosed after Close; the owner's end
// (snodo.ErrOwnerExited: Listen's ctx, or the ListenTo actor), a
// server teardown or a full queue as for snodo.Subscription; a -32000
// wrapping snodo.ErrClosed after Close of the supervised client or
// pool, or the error wrapping ErrGaveUp when supervision gave up.
type supervised struct {
	*listening.End                     // Done and Err
	outer          *snodo.Subscription // what Listen returned: named in the actor's messages
	sys            *protoactor.ActorSystem
	pool           *Pool // Pool.Listen's: where it moves when its member leaves
	filter         snodo.Filter
	opts           []snodo.ListenOption                                 // for each server's subscription
	actor          *protoactor.PID                                      // ListenTo, or nil
	opened         func(*listening.Sub, snodo.Origin) listening.Message // listening.Settings.Opened: the actor's first message
	owner          context.Context                                      // Listen's ctx
	unwatch        func()                                               // ends the watch on actor

	ctx    context.Context // owner, or Close
	cancel context.CancelFunc
	events chan snodo.Event

	mu        sync.Mutex
	c         *Client // the member holding it
	inner     *snodo.Subscription
	resubs    int
	closed    bool
	actorGone bool // the ListenTo actor terminated
}

// Listen opens a subscription on the current server (waiting for a
// restart for at most WithMaxWait, or failing fast, like Request) and
// returns once the server acknowledged it. ctx is its owner, as for snodo.Client.Listen. Events
// go to the Events channel, or with snodo.ListenTo(pid) to the actor as
// *snodo.SubscriptionEvent messages (markers included) and one final
// *snodo.SubscriptionEnded, across restarts; the subscription then
// watches the actor and ends when it terminates. The Subscription field
// of those messages is the one Listen returned.
func (c *Client) Listen(ctx context.Context, f snodo.Filter, opts ...snodo.ListenOption) (*snodo.Subscription, error) {
	return c.listen(ctx, nil, f, opts, false)
}

// listen opens the subscription; a pool's moves to another of its
// members when c leaves it. reserved says the caller (a pool) already
// counted it in c's in-flight figure; it is released once the server
// acknowledged the subscription, or it failed.
func (c *Client) listen(ctx context.Context, pool *Pool, f snodo.Filter, opts []snodo.ListenOption, reserved bool) (*snodo.Subscription, error) {
	if !reserved {
		c.s.inflight.Add(1)
	}
	held := true
	defer func() {
		if held {
			c.s.release()
		}
	}()
	set, err := listening.SettingsOf(opts)
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if set.Actor != nil {
		// As snodo.Client.Listen checks it (the actor is watched from
		// this system): otherwise the subscription would end at once.
		if _, ok := c.s.sys.ProcessRegistry.Get(set.Actor); !ok {
			return nil, fmt.Errorf("supervisor: %s: %w: actor %s does not exist (has it stopped? is it in another actor system than the supervisor's?)",
				listenMethod, snodo.ErrOwnerExited, set.Actor.Id)
		}
	}
	var each []snodo.ListenOption
	if set.MaxQueue > 0 || set.MaxQueueBytes > 0 {
		each = append(each, snodo.MaxQueued(set.MaxQueue, set.MaxQueueBytes))
	}
	inner, cl, err := c.s.listen(ctx, f, each, nil, !c.s.cfg.failFast, c.s.cfg.maxWait)
	held = false
	c.s.release()
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &supervised{
		sys: c.s.sys, pool: pool, c: c, filter: f, opts: each, actor: set.Actor, opened: set.Opened, owner: ctx,
		ctx: sctx, cancel: cancel,
		events: make(chan snodo.Event),
		End:    listening.NewEnd(),
		inner:  inner,
	}
	if s.actor != nil {
		s.unwatch = snodoactor.WatchOwner(c.s.sys, s.actor, func() {
			s.mu.Lock()
			s.actorGone = true
			s.mu.Unlock()
			s.cancel()
		})
	}
	s.outer = (*snodo.Subscription)(listening.New(s))
	go s.run(inner, cl)
	return s.outer, nil
}

// Member is the supervised client holding the subscription: for a pool,
// the member holding it now (it moves when its member leaves the pool).
func (s *supervised) Member() *Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// listen opens a subscription on a connection other than prev, waiting
// for one (unless !wait) for at most limit (0: while supervision lasts).
func (st *state) listen(ctx context.Context, f snodo.Filter, opts []snodo.ListenOption, prev *snodo.Client, wait bool, limit time.Duration) (*snodo.Subscription, *snodo.Client, error) {
	for {
		cl, err := st.acquire(ctx, listenMethod, prev, wait, limit)
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
func (s *supervised) ID() int64 { return s.current().ID() }

// Acknowledged is what the current server agreed to honour.
func (s *supervised) Acknowledged() snodo.Filter { return s.current().Acknowledged() }

// Resubscriptions counts the re-subscriptions after restarts.
func (s *supervised) Resubscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resubs
}

// Events delivers the events in order, a ResubscribedMethod marker after
// each restart, and is closed once the subscription has ended (after
// Done: Err is final by then). With
// ListenTo it only closes: the events go to the actor. Delivery
// is unbuffered past the inner subscription's queue: a reader that falls
// behind by more than that queue (snodo.MaxQueued) ends it with snodo.ErrSubscriptionQueueFull.
func (s *supervised) Events() <-chan snodo.Event { return s.events }

// Close cancels the subscription on the server and returns once it has
// ended. It always returns nil.
func (s *supervised) Close() error {
	s.mu.Lock()
	s.closed = true
	inner := s.inner
	s.mu.Unlock()
	s.cancel()
	_ = inner.Close()
	<-s.Done()
	return nil
}

func (s *supervised) current() *snodo.Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner
}

// run forwards events and re-subscribes after restarts until the
// subscription ends for another reason.
func (s *supervised) run(inner *snodo.Subscription, cl *snodo.Client) {
	var why error   // why it ended: end's verdict
	defer s.ended() // after Done closes: the actor may read Err
	// Events closes after Done, so a reader that sees Events close reads
	// the final Err (Err is nil until Done closes).
	defer close(s.events)
	defer func() { s.Finish(why) }()
	defer s.cancel()
	if s.unwatch != nil {
		defer s.unwatch()
	}
	if s.actor != nil && s.opened != nil {
		s.sys.Root.Send(s.actor, s.opened((*listening.Sub)(s.outer), s.Member().Origin())) // before any event
	}
	for {
		if !s.forward(inner) {
			why = s.end(inner, snodo.ErrSubscriptionClosed)
			return
		}
		ended := inner.Err()
		if s.isClosed() || !(lostConnection(ended) || s.memberLeft(ended)) {
			why = s.end(inner, ended)
			return
		}
		// Re-subscribing waits for the restart as long as supervision
		// lasts: the intensity limit ends it.
		var (
			next   *snodo.Subscription
			ncl    *snodo.Client
			err    = ended
			reason = exitWords(ended)
		)
		if lostConnection(ended) {
			next, ncl, err = s.Member().s.listen(s.ctx, s.filter, s.opts, cl, true, 0)
		}
		if err != nil && s.memberLeft(err) {
			reason = leftWords(s.Member().s.cfg.name, err)
			next, ncl, err = s.move()
		}
		if err != nil {
			why = s.end(inner, err)
			return
		}
		s.mu.Lock()
		s.inner, s.resubs = next, s.resubs+1
		n := s.resubs
		s.mu.Unlock()
		inner, cl = next, ncl
		params, _ := json.Marshal(map[string]any{"resubscriptions": n, "reason": reason, "subscriptionId": next.ID()})
		s.deliver(inner, snodo.Event{Method: ResubscribedMethod, Params: params})
	}
}

// memberLeft reports whether a pool subscription's server subscription
// ended with err because its member ended (Shrink closed it, or it gave
// up): then it moves, unless the pool is closing too.
func (s *supervised) memberLeft(err error) bool {
	return s.pool != nil && s.Member().left(err)
}

// leftWords says why a pool member left, for the marker of a move.
func leftWords(member string, err error) string {
	if errors.Is(err, ErrGaveUp) {
		return fmt.Sprintf("pool member %s gave up: %s", member, exitWords(err))
	}
	return fmt.Sprintf("pool member %s was closed (Shrink took it out, or its Close)", member)
}

// move opens the subscription on another member of the pool, waiting for
// one to be up while the pool and the subscription last. A member that
// ends meanwhile is passed over as the one before it.
func (s *supervised) move() (*snodo.Subscription, *snodo.Client, error) {
	for range maxPoolSize {
		m, err := s.pool.pick(s.ctx, listenMethod, s.Member(), -1, true) // as re-subscribing waits
		if err != nil {
			return nil, nil, err
		}
		s.mu.Lock()
		s.c = m
		s.mu.Unlock()
		next, ncl, err := m.s.listen(s.ctx, s.filter, s.opts, nil, true, 0)
		m.s.release() // pick counted it in
		if err == nil || !s.memberLeft(err) {
			return next, ncl, err
		}
	}
	return nil, nil, jsonrpc.ClosedError(errors.New("supervisor: every pool member ended while a subscription moved"))
}

// ended tells the ListenTo actor, with one *snodo.SubscriptionEnded.
func (s *supervised) ended() {
	if s.actor == nil {
		return
	}
	s.mu.Lock()
	end := &snodo.SubscriptionEnded{Subscription: s.outer, Err: s.Err(), Origin: s.c.Origin()}
	s.mu.Unlock()
	s.sys.Root.Send(s.actor, end)
}

// deliver hands one event to the actor or the Events channel; false
// when the subscription was closed or its owner is done first.
func (s *supervised) deliver(inner *snodo.Subscription, ev snodo.Event) bool {
	if s.actor != nil {
		s.sys.Root.Send(s.actor, &snodo.SubscriptionEvent{Subscription: s.outer, Event: ev, Origin: s.Member().Origin()})
		return s.ctx.Err() == nil
	}
	select {
	case s.events <- ev:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// forward copies inner's events until it ends (true) or the subscription
// is closed or its owner is done (false).
func (s *supervised) forward(inner *snodo.Subscription) bool {
	for {
		select {
		case ev, ok := <-inner.Events():
			if !ok {
				<-inner.Done()
				return true
			}
			if !s.deliver(inner, ev) {
				_ = inner.Close()
				return false
			}
		case <-s.ctx.Done():
			_ = inner.Close()
			return false
		}
	}
}

func (s *supervised) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// end says why the subscription ended, for run to record. Close wins;
// an owner that went away while re-subscribing reads as the owner's end.
func (s *supervised) end(inner *snodo.Subscription, err error) error {
	_ = inner.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return snodo.ErrSubscriptionClosed
	case s.actorGone:
		return fmt.Errorf("%w: actor %s terminated", snodo.ErrOwnerExited, s.actor.Id)
	case s.owner.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || err == snodo.ErrSubscriptionClosed):
		return fmt.Errorf("%w: the context given to Listen is done: %w", snodo.ErrOwnerExited, context.Cause(s.owner))
	}
	return err
}
