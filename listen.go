package snodo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/listening"
	"github.com/snodo/snodo/internal/substream"
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

// Subscription is an open subscription, whoever serves it:
// Client.Listen (a subscriptions/listen stream, or on a legacy-era
// server the client's own, over resources/subscribe), a supervised client's or a pool's (which re-sends it
// after a restart or moves it off a member that left, putting a
// supervisor.ResubscribedMethod marker event before the new server's
// events), or a remote client's (served by a host over NATS, kept alive
// by heartbeats). Its methods are safe for concurrent use; Close may be
// called any number of times.
type Subscription listening.Sub

// impl is what serves s.
func (s *Subscription) impl() listening.Impl { return listening.ImplOf((*listening.Sub)(s)) }

// ID is the listen request's JSON-RPC ID, which the server carries in
// every notification of the subscription; json.Marshal(ID()) is its wire
// form. A supervised subscription's changes with each re-subscription; a
// remote one's is its id between the client and the host; a legacy-era
// one's is 0 (there is no listen request).
func (s *Subscription) ID() int64 { return s.impl().ID() }

// Acknowledged is the subset of the requested filter the server agreed to
// honour. Types it left out are never delivered.
func (s *Subscription) Acknowledged() Filter { return s.impl().Acknowledged() }

// Events delivers the subscription's events in the order the server sent
// them, and is closed after the last one once the subscription ended
// (after Done: Err is final by then). With ListenTo it is closed at
// once: the actor gets the events. A reader that falls behind by more
// than the queue bound (MaxQueued) ends it
// with snodo.ErrSubscriptionQueueFull.
func (s *Subscription) Events() <-chan Event { return s.impl().Events() }

// Done is closed once the subscription has ended, whatever the cause.
func (s *Subscription) Done() <-chan struct{} { return s.impl().Done() }

// Err is why the subscription ended: nil while it runs and after a
// graceful end (the server answered the listen request); a -32000 *Error
// when the connection went away; the server's *Error when it answered the
// listen request with one; otherwise it wraps snodo.ErrSubscriptionClosed,
// snodo.ErrSubscriptionTeardown, snodo.ErrSubscriptionQueueFull or snodo.ErrOwnerExited. A supervised one
// may also end with the supervisor's error wrapping supervisor.ErrGaveUp, a remote one with
// remote.ErrHostGone or remote.ErrHostEnded.
func (s *Subscription) Err() error { return s.impl().Err() }

// Close cancels the subscription: the server is sent
// notifications/cancelled for the listen request (Close does not wait for
// an answer to it; on a legacy-era server, resources/unsubscribe for the
// URIs no other subscription watches, waiting at most 5 s), Err becomes snodo.ErrSubscriptionClosed unless the
// subscription had already ended, and Events is closed after the events
// already queued. Close returns once the subscription has ended; it always
// returns nil.
func (s *Subscription) Close() error { return s.impl().Close() }

// ListenOption tunes one subscription. Build it with ListenTo or
// MaxQueued. It has no fields or methods of its own: it is the value of
// the internal type it names, which the supervisor and remote packages
// read too. The zero ListenOption sets nothing.
type ListenOption = listening.Option

// listenSettingsOf applies opts in order; the first invalid one is an
// error.
func listenSettingsOf(opts ...ListenOption) (listening.Settings, error) {
	return listening.SettingsOf(opts)
}

// ListenTo delivers the subscription's events to the actor pid, as
// *SubscriptionEvent messages and then one *SubscriptionEnded, instead of
// the Events channel. The subscription watches pid and is cancelled when
// it terminates. pid lives in the connection's actor system.
func ListenTo(pid *protoactor.PID) ListenOption {
	return listening.NewOption(func(o *listening.Settings) error {
		if pid == nil {
			return errors.New("ListenTo: nil PID")
		}
		o.Actor = pid
		return nil
	})
}

// MaxQueued bounds the events waiting for a slow reader: at most events
// of them, and bytes of their params (an event arriving at an empty queue
// is always taken, however large). Past either bound the subscription
// ends with snodo.ErrSubscriptionQueueFull and is cancelled on the server.
// 0 keeps a bound's default: 1024 events, 16 MiB; a negative one is an
// error.
func MaxQueued(events, bytes int) ListenOption {
	return listening.NewOption(func(o *listening.Settings) error {
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
	})
}

// Listen subscribes to the notifications f asks for and returns once the
// server acknowledged the subscription, in either era. ctx is the
// subscription's owner: when it is done, as on Close, the subscription
// ends and Events closes. Events may be read on the same goroutine that
// makes other requests: delivery never blocks the connection. The wait
// for the acknowledgement is bounded by the connection's timeout
// (WithTimeout): past it Listen fails with a -32001 wrapping ErrTimeout.
//
// Modern era: a subscriptions/listen stream; Close and ctx send the
// server notifications/cancelled for it.
//
// Legacy era (no subscriptions/listen): the client serves the
// subscription itself. Acknowledged is the part of f the server declares
// it sends: the list changes its capabilities mark listChanged, and
// ResourceSubscriptions when it declares resources.subscribe. Listen
// sends resources/subscribe for each of those URIs first (when one is
// refused, Listen fails with the server's error and unsubscribes the ones
// done); the events are the server's list_changed notifications f asks
// for and its notifications/resources/updated for those URIs. When the
// subscription ends (Close, ctx, the connection's end: Client.Done), it
// sends resources/unsubscribe for its URIs, waiting at most 5 s for the
// answers (Close returns after that); a URI that another open
// subscription on the connection still watches stays subscribed. Its ID
// is 0.
//
// In both eras, a notification a subscription receives is not given to
// the WithNotificationHandler handler; one that no subscription asks for
// still is (in the legacy era, list changes and resource updates come
// whether asked for or not).
func (c *Client) Listen(ctx context.Context, f Filter, opts ...ListenOption) (*Subscription, error) {
	set, err := listenSettingsOf(opts...)
	if err != nil {
		return nil, fmt.Errorf("snodo: %w", err)
	}
	// The actor's messages name the *Subscription Listen returns: they
	// wait until it is made (events may come as Open returns).
	outer, ready := (*Subscription)(new(listening.Sub)), make(chan struct{})
	defer close(ready)
	root := c.conn.System().Root // the system substream sends in (its default)
	post := func(_ *substream.Subscription, ev *Event, err error) {
		<-ready
		root.Send(set.Actor, subscriptionMessage(outer, ev, err, c.mcp.origin))
	}
	o := substream.Options{Actor: set.Actor, MaxQueue: set.MaxQueue, MaxQueueBytes: set.MaxQueueBytes, AckTimeout: c.mcp.timeout,
		Logger: c.notes.logger, Post: post}
	if set.Opened != nil {
		o.PostFirst = func(*substream.Subscription) {
			<-ready
			root.Send(set.Actor, set.Opened((*listening.Sub)(outer), c.mcp.origin))
		}
	}
	var params json.RawMessage
	var refused error // legacy: the resources/subscribe the server refused
	if c.legacy() {
		ls := newLegacyListen(f, c.Capabilities(), cmp.Or(set.MaxQueue, limits.MaxQueue), cmp.Or(set.MaxQueueBytes, limits.MaxQueueBytes))
		o.Serve = func(ctx context.Context, deliver func(string, json.RawMessage)) error {
			err := c.serveLegacy(ctx, ls, deliver)
			if errors.Is(err, errRefused) {
				refused = err
			}
			return err
		}
	} else {
		params, err = json.Marshal(struct {
			Notifications Filter `json:"notifications"`
		}{f})
		if err != nil {
			return nil, fmt.Errorf("snodo: cannot marshal the subscription filter: %w", err)
		}
		ctx = c.observeSubscription(ctx, &o)
	}
	sub, err := substream.Open(ctx, c.conn, params, c.encodedMeta(), o)
	if err != nil {
		if refused != nil { // Open has returned after Serve: no race
			return nil, refused
		}
		return nil, err
	}
	listening.Set((*listening.Sub)(outer), sub)
	return outer, nil
}

// legacyUnsubscribeWait bounds the resources/unsubscribe requests a
// legacy subscription sends as it ends.
const legacyUnsubscribeWait = 5 * time.Second

// errRefused marks a resources/subscribe the server refused, which fails
// Listen with the server's error.
var errRefused = errors.New("the server refused resources/subscribe")

// legacyListens are the legacy-era subscriptions open on one connection:
// the notifications they claim (onNotification offers each one before
// the notification handler gets it) and how many of them watch each
// resource URI, so that one ending does not unsubscribe another's.
//
// Neither map needs a bound of its own: subs holds the open
// subscriptions, each removed as it ends, and refs one entry per URI
// that an open subscription (or one being opened) watches, deleted when
// its count falls to zero, so it never outgrows the URIs of the open
// subscriptions' filters.
type legacyListens struct {
	n    atomic.Int32 // open subscriptions: none costs one atomic load a notification
	mu   sync.Mutex
	subs map[*legacyListen]struct{}

	reqMu sync.Mutex // held across each resources/(un)subscribe, so a URI's go out in order
	refs  map[string]int
}

// legacyListen is one legacy-era subscription.
type legacyListen struct {
	acked    Filter          // what it delivers
	uris     map[string]bool // acked.ResourceSubscriptions
	max      int             // bound of pending's events (MaxQueued's): past it or maxBytes, open fails with snodo.ErrSubscriptionQueueFull
	maxBytes int             // bound of pending's params bytes (MaxQueued's); an event arriving at an empty pending is always taken

	mu         sync.Mutex
	deliver    func(string, json.RawMessage) // set once acknowledged
	pending    []Event                       // claimed before the acknowledgement
	bytes      int                           // of pending's params
	overflowed bool
}

// newLegacyListen is the subscription f asks for on a legacy server
// declaring caps, keeping at most max events and maxBytes of their params
// until it is acknowledged.
func newLegacyListen(f Filter, caps ServerCapabilities, max, maxBytes int) *legacyListen {
	ls := &legacyListen{uris: map[string]bool{}, max: max, maxBytes: maxBytes}
	ls.acked = Filter{
		ToolsListChanged:     f.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   f.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: f.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged,
	}
	if caps.Resources != nil && caps.Resources.Subscribe {
		for _, uri := range f.ResourceSubscriptions {
			if !ls.uris[uri] {
				ls.uris[uri] = true
				ls.acked.ResourceSubscriptions = append(ls.acked.ResourceSubscriptions, uri)
			}
		}
	}
	return ls
}

// wants reports whether ls delivers method (uri: a resource update's).
func (ls *legacyListen) wants(method, uri string) bool {
	switch method {
	case methodToolsListChanged:
		return ls.acked.ToolsListChanged
	case methodPromptsListChanged:
		return ls.acked.PromptsListChanged
	case methodResourcesListChanged:
		return ls.acked.ResourcesListChanged
	case methodResourceUpdated:
		return ls.uris[uri]
	}
	return false
}

// offer delivers a claimed notification, or keeps it until the
// acknowledgement. It never blocks.
func (ls *legacyListen) offer(method string, params json.RawMessage) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.deliver != nil {
		ls.deliver(method, params)
		return
	}
	if len(ls.pending) >= ls.max || len(ls.pending) > 0 && ls.bytes+len(params) > ls.maxBytes {
		ls.overflowed = true
		return
	}
	ls.pending = append(ls.pending, Event{Method: method, Params: params})
	ls.bytes += len(params)
}

// open acknowledges the subscription, then delivers what came before.
func (ls *legacyListen) open(deliver func(string, json.RawMessage)) error {
	ack, err := json.Marshal(struct {
		Notifications Filter `json:"notifications"`
	}{ls.acked})
	if err != nil {
		return fmt.Errorf("snodo: cannot marshal the acknowledged filter: %w", err)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.overflowed {
		return fmt.Errorf("%w: more than %d notifications or %d bytes of their params came while Listen subscribed to the resources (raise MaxQueued)", ErrSubscriptionQueueFull, ls.max, ls.maxBytes)
	}
	deliver(methodAcknowledged, ack)
	for _, ev := range ls.pending {
		deliver(ev.Method, ev.Params)
	}
	ls.pending, ls.bytes, ls.deliver = nil, 0, deliver
	return nil
}

// methodAcknowledged acknowledges a subscription (the subscription
// package takes it as the server's).
const methodAcknowledged = "notifications/subscriptions/acknowledged"

// claim offers a notification to the subscriptions that want it and
// reports whether any did. It runs on the connection's reader.
func (l *legacyListens) claim(method string, params json.RawMessage) bool {
	if l.n.Load() == 0 {
		return false
	}
	var uri string
	switch method {
	case methodToolsListChanged, methodPromptsListChanged, methodResourcesListChanged:
	case methodResourceUpdated:
		var p ResourceUpdated
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			return false // malformed: the handler's
		}
		uri = p.URI
	default:
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	claimed := false
	for ls := range l.subs {
		if ls.wants(method, uri) {
			ls.offer(method, params)
			claimed = true
		}
	}
	return claimed
}

func (l *legacyListens) add(ls *legacyListen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs == nil {
		l.subs = map[*legacyListen]struct{}{}
	}
	l.subs[ls] = struct{}{}
	l.n.Store(int32(len(l.subs)))
}

func (l *legacyListens) remove(ls *legacyListen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs, ls)
	l.n.Store(int32(len(l.subs)))
}

// serveLegacy serves ls (Listen's Serve in the legacy era): it claims
// notifications, subscribes ls's URIs, acknowledges, and waits for the
// end, then unsubscribes.
func (c *Client) serveLegacy(ctx context.Context, ls *legacyListen, deliver func(string, json.RawMessage)) error {
	l := &c.listens
	l.add(ls)
	defer l.remove(ls)
	uris := ls.acked.ResourceSubscriptions
	if err := c.subscribeResources(ctx, uris); err != nil {
		return err
	}
	if err := ls.open(deliver); err != nil {
		l.remove(ls)
		c.unsubscribeResources(ctx, uris)
		return err
	}
	var err error
	select {
	case <-ctx.Done():
	case <-c.conn.Done():
		err = jsonrpc.ClosedError(cmp.Or(c.conn.Err(), ErrConnectionClosed))
	}
	l.remove(ls) // nothing more is delivered
	c.unsubscribeResources(ctx, uris)
	return err
}

// subscribeResources sends resources/subscribe for each of uris that no
// other subscription on the connection watches. When the server refuses
// one, it undoes the others and returns an error wrapping errRefused and
// the server's.
func (c *Client) subscribeResources(ctx context.Context, uris []string) error {
	l := &c.listens
	l.reqMu.Lock()
	defer l.reqMu.Unlock()
	if l.refs == nil {
		l.refs = map[string]int{}
	}
	for i, uri := range uris {
		if l.refs[uri] == 0 {
			if err := c.resourceRequest(ctx, "resources/subscribe", uri); err != nil {
				c.releaseResources(ctx, uris[:i])
				if ctx.Err() != nil {
					return err
				}
				return fmt.Errorf("snodo: Listen: %w %s: %w", errRefused, uri, err)
			}
		}
		l.refs[uri]++
	}
	return nil
}

// unsubscribeResources ends the watch of uris by one subscription.
func (c *Client) unsubscribeResources(ctx context.Context, uris []string) {
	if len(uris) == 0 {
		return
	}
	c.listens.reqMu.Lock()
	defer c.listens.reqMu.Unlock()
	c.releaseResources(ctx, uris)
}

// releaseResources, under reqMu, drops one watch of each of uris and
// sends resources/unsubscribe for those no subscription watches any
// more: best effort, within legacyUnsubscribeWait (ctx's values only).
func (c *Client) releaseResources(ctx context.Context, uris []string) {
	if len(uris) == 0 {
		return
	}
	wait := legacyUnsubscribeWait
	if t := c.mcp.timeout; t > 0 && t < wait {
		wait = t
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	l := &c.listens
	for _, uri := range uris {
		l.refs[uri]--
		if l.refs[uri] > 0 {
			continue
		}
		delete(l.refs, uri)
		select {
		case <-c.conn.Done():
			continue // the server is gone, and its subscriptions with it
		default:
		}
		if err := c.resourceRequest(ctx, "resources/unsubscribe", uri); err != nil {
			c.notes.logger.Debug("snodo: resources/unsubscribe failed as a subscription ended", "uri", uri, "error", err)
		}
	}
}

func (c *Client) resourceRequest(ctx context.Context, method, uri string) error {
	_, err := c.completeRequest(ctx, method, struct {
		URI string `json:"uri"`
	}{uri}, nil)
	return err
}
