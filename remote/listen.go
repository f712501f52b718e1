package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/bytebound"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/listening"
	"github.com/snodo/snodo/internal/mcpmethod"
	"github.com/snodo/snodo/supervisor"
)

// ErrHostEnded: the host ended the subscription (its MCP server ended
// it, the host drained, or it decided the caller had gone); the error
// says which. Listen again to continue on another host.
var ErrHostEnded = errors.New("remote: the host ended the subscription")

// inboxQueue bounds the messages of one subscription between the NATS
// delivery goroutine and the subscription's own; past it the
// subscription ends with snodo.ErrSubscriptionQueueFull.
const inboxQueue = 256

// hosted serves a *snodo.Subscription served by a host: events arrive
// on Events in the order the MCP server sent them (with the supervisor's
// resubscribed markers when the host's server restarts). The subscriber
// sends keep-alives; the host cancels the listen on its MCP server when
// they stop.
//
// Its End's Err is why it ended: nil after a graceful end;
// snodo.ErrSubscriptionClosed after Close; snodo.ErrOwnerExited when
// Listen's ctx is done or the ListenTo actor terminated;
// snodo.ErrSubscriptionQueueFull; a -32000 wrapping ErrHostGone when the host
// stopped sending heartbeats, or snodo.ErrClosed (Client.Close); an
// error wrapping ErrHostEnded, with the host's reason, when the host
// ended it (and snodo.ErrSubscriptionTeardown when its MCP server tore
// it down, as for a local subscription).
type hosted struct {
	*listening.End                     // Done and Err
	outer          *snodo.Subscription // what Listen returned: named in the actor's messages
	c              *Client
	token          string
	reqID          int64 // the listen request's id between this client and the host
	owner          context.Context
	in             chan *nats.Msg
	events         chan snodo.Event
	quit           chan error      // Close and Client.Close: why
	actor          *protoactor.PID // ListenTo, or nil
	sys            *protoactor.ActorSystem
	trace          connopts.SubscriptionTrace // nil when tracing and metrics are off

	// maxBytes bounds the params bytes of the events waiting in events,
	// which bytes counts (run's alone).
	maxBytes int
	bytes    bytebound.Counter

	mu      sync.Mutex
	acked   snodo.Filter
	host    string
	control string
	id      string
}

// Listen opens a subscription for the notifications f asks for on a host
// of the name and returns once the host's MCP server acknowledged it (a
// client of the legacy era: the host's legacy-era connection, where its
// calls go, when the host has one; see ServeLegacy). ctx
// is the subscription's owner: when it is done, the host is told to
// cancel it, as on Close. snodo.MaxQueued bounds the events waiting
// for the reader (default 1024), and their
// params (default 16 MiB): past either the subscription ends with
// snodo.ErrSubscriptionQueueFull and is cancelled on the host.
//
// With snodo.ListenTo(pid) the events go to the actor instead, as for a
// supervised or pooled subscription: *snodo.SubscriptionEvent messages
// in order (the host's resubscribed markers included), then one
// *snodo.SubscriptionEnded with Err, sent once Done is closed; Events
// only closes. Their Subscription field is the one Listen returned.
// pid lives in the client's actor system
// (snodo.WithActorSystem in WithConnectOptions); the subscription watches it and is cancelled on
// the host when it terminates (Err wraps snodo.ErrOwnerExited).
//
// When ctx is done before the host acknowledged the subscription, Listen
// fails as a local Listen does: with an error wrapping
// snodo.ErrOwnerExited and ctx's cause (errors.Is context.Canceled or
// context.DeadlineExceeded), and the host, hearing no keep-alive, cancels
// it.
//
// The subscription is traced and measured as a local one is, by the same
// code (snodo's traceSubscription, through internal/connopts): a CLIENT span subscriptions/listen,
// child of the span in ctx, until it ends, whose context goes to the
// host; a SERVER span per event; the queue depth at each event queued on
// Events, and an overflow when it ends with snodo.ErrSubscriptionQueueFull.
func (c *Client) Listen(ctx context.Context, f snodo.Filter, opts ...snodo.ListenOption) (*snodo.Subscription, error) {
	if ctx == nil {
		return nil, nilContextError(mcpmethod.Listen)
	}
	if ctx.Err() != nil {
		// Sent, it would open a subscription for nobody.
		return nil, fmt.Errorf("remote: %s on %s ended before the server acknowledged it: %w", mcpmethod.Listen, c.name, ownerLeft(ctx))
	}
	o, err := listening.SettingsOf(opts)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	if o.MaxQueue == 0 {
		o.MaxQueue = limits.MaxQueue
	}
	if o.MaxQueueBytes == 0 {
		o.MaxQueueBytes = limits.MaxQueueBytes
	}
	params, err := json.Marshal(struct {
		Notifications snodo.Filter `json:"notifications"`
	}{f})
	if err != nil {
		return nil, fmt.Errorf("remote: cannot marshal the subscription filter: %w", err)
	}
	// A pinned session's subscription goes where its calls go (pin.go):
	// its resource subscriptions are then those of the server its calls
	// reach.
	to, pc := c.subj.listen, (*pinCall)(nil)
	if c.cfg.era == snodo.EraLegacy {
		if pc, err = pinOf(ctx); err != nil {
			return nil, err
		}
		defer pc.end()
		if pc != nil && pc.holder != "" {
			to = c.subj.listenTo(pc.holder)
		}
	}
	// The subscription's CLIENT span and metrics, as a local Listen makes
	// them (the same code): the span's context goes to the host in the
	// request's headers.
	ctx, trace := c.traced.TraceSubscription(ctx)
	s := &hosted{
		c: c, owner: ctx,
		in:       make(chan *nats.Msg, inboxQueue),
		events:   make(chan snodo.Event, o.MaxQueue),
		maxBytes: o.MaxQueueBytes,
		quit:     make(chan error, 1),
		End:      listening.NewEnd(),
		actor:    o.Actor,
		trace:    trace,
	}
	if s.actor != nil {
		s.events = make(chan snodo.Event) // nothing is sent on it: it only closes
		s.sys = c.cfg.system
		if s.sys == nil {
			s.sys = snodoactor.Shared()
		}
	}
	token, err := c.register(nil, s)
	if err != nil {
		traceEnd(trace, err)
		return nil, err
	}
	s.token = token
	id, _ := strconv.ParseInt(token, 10, 64)
	s.reqID = id
	s.outer = (*snodo.Subscription)(listening.New(s))
	m := nats.NewMsg(to)
	m.Reply = c.inbox + token
	m.Data = trimNL(jsonrpc.AppendRequest(nil, id, mcpmethod.Listen, params))
	m.Header.Set(hdrBeat, millis(c.cfg.beat))
	if c.cfg.era == snodo.EraLegacy {
		// Served by the pool its calls go to: the hosts' legacy-era
		// connection, if they have one (ServeLegacy).
		key, isNew := pc.settings()
		m.Header.Set(hdrOpts, string(appendOpts(nil, callOpts{legacy: true, pin: key, pinNew: isNew})))
	}
	injectTrace(ctx, m.Header)
	if err := c.nc.PublishMsg(m); err != nil {
		c.unregister(token)
		err = closedErr(fmt.Sprintf("cannot send %s to %s over NATS: %v", mcpmethod.Listen, c.name, err), err)
		traceEnd(trace, err)
		return nil, err
	}
	if err := s.awaitAck(ctx); err != nil {
		if pc != nil && pc.holder != "" && errors.Is(err, ErrNoHost) {
			err = c.lostHost(pc, mcpmethod.Listen)
		}
		pc.ran("", false, err)
		c.unregister(token)
		traceEnd(trace, err)
		s.Finish(nil) // for a Client.Close racing with this Listen
		return nil, err
	}
	s.mu.Lock()
	pc.ran(s.host, false, nil)
	s.mu.Unlock()
	var unwatch func()
	if s.actor != nil {
		unwatch = snodoactor.WatchOwner(s.sys, s.actor, func() {
			s.stop(fmt.Errorf("%w: the ListenTo actor terminated", snodo.ErrOwnerExited))
		})
	}
	go s.run(unwatch)
	return s.outer, nil
}

// awaitAck waits for the host's acknowledgement.
func (s *hosted) awaitAck(ctx context.Context) error {
	silence := time.Duration(missedBeats)*s.c.cfg.beat + s.c.cfg.beat/2
	watchdog := time.NewTimer(silence)
	defer watchdog.Stop()
	for {
		select {
		case m := <-s.in:
			watchdog.Reset(silence)
			if m.Header.Get(hdrStatus) == noResponders {
				return noHostErr(fmt.Sprintf("no host serves %q (subject %s): start a snodo node that serves it, connected to this NATS system",
					s.c.name, s.c.subj.listen))
			}
			switch m.Header.Get(hdrKind) {
			case kindAck:
				var f snodo.Filter
				_ = json.Unmarshal(m.Data, &f)
				s.mu.Lock()
				s.acked, s.host, s.control, s.id = f, m.Header.Get(hdrHost), m.Header.Get(hdrControl), m.Header.Get(hdrSub)
				s.mu.Unlock()
				return nil
			case kindEnd:
				return fmt.Errorf("remote: %s on %s ended before the server acknowledged it: %w", mcpmethod.Listen, s.c.name, endError(m))
			}
		case <-watchdog.C:
			return closedErr(fmt.Sprintf("%s on %s: the host sent nothing for %s", mcpmethod.Listen, s.c.name, silence), ErrHostGone)
		case err := <-s.quit:
			return err
		case <-ctx.Done():
			// The owner left, as for a local Listen: no error of the
			// subscription's; the host sees no keep-alive and cancels it.
			return fmt.Errorf("remote: %s on %s ended before the server acknowledged it: %w", mcpmethod.Listen, s.c.name, ownerLeft(ctx))
		}
	}
}

// ownerLeft is why a subscription ends when ctx, its owner, is done: the
// error a local subscription ends with then (snodo.ErrOwnerExited and the
// ctx's cause).
func ownerLeft(ctx context.Context) error {
	return fmt.Errorf("%w: the context given to Listen is done: %w", snodo.ErrOwnerExited, context.Cause(ctx))
}

// endError is why a host ended a subscription: nil for a graceful end.
func endError(m *nats.Msg) error {
	if len(m.Data) == 0 {
		return nil
	}
	var e jsonrpc.Error
	if err := json.Unmarshal(m.Data, &e); err != nil {
		return fmt.Errorf("%w: malformed end: %.200q", ErrHostEnded, m.Data)
	}
	if m.Header.Get(hdrLocal) != "" {
		causes := []error{ErrHostEnded, jsonrpc.ErrConnectionClosed}
		if m.Header.Get(hdrTeardown) != "" {
			causes = append(causes, snodo.ErrSubscriptionTeardown)
		}
		if m.Header.Get(hdrPinLost) != "" {
			return pinLostErr("host " + m.Header.Get(hdrHost) + " ended the subscription: " + e.Message)
		}
		return jsonrpc.NewLocalError(e.Code, "host "+m.Header.Get(hdrHost)+" ended the subscription: "+e.Message, causes...)
	}
	return fmt.Errorf("%w: %w", ErrHostEnded, &e)
}

// deliver queues one message for run; never blocks.
func (s *hosted) deliver(m *nats.Msg) {
	select {
	case s.in <- m:
	default:
		select {
		case s.quit <- snodo.ErrSubscriptionQueueFull:
		default:
		}
	}
}

// run forwards events, sends keep-alives and watches the host's
// heartbeats until the subscription ends.
func (s *hosted) run(unwatch func()) {
	beat := s.c.cfg.beat
	// The host's silence, as for a call (detector.go): suspected after
	// watch.suspectAfter, then probed every beat; gone when NATS holds no
	// connection of it, or after hostSilenceCap of silence.
	s.mu.Lock()
	watch := s.c.watchFor(s.host)
	s.mu.Unlock()
	var gone <-chan struct{}
	if watch != nil {
		gone = watch.gone
	}
	heardAt, lastBeat := time.Now(), time.Time{}
	watchdog := time.NewTimer(watch.suspectAfter(beat))
	defer watchdog.Stop()
	keepalive := time.NewTicker(beat)
	defer keepalive.Stop()
	var why error
	tellHost := true
loop:
	for {
		select {
		case m := <-s.in:
			now := time.Now()
			if m.Header.Get(hdrKind) == kindBeat && watch != nil {
				if !lastBeat.IsZero() {
					watch.addGap(now.Sub(lastBeat), now)
				}
				lastBeat = now
			}
			heardAt = now
			watchdog.Reset(watch.suspectAfter(beat))
			switch m.Header.Get(hdrKind) {
			case kindEvent:
				ev := snodo.Event{Method: m.Header.Get(hdrMethod), Params: m.Data}
				if s.actor != nil { // no queue: the actor's mailbox takes it
					s.traceEvent(ev)
					s.sys.Root.Send(s.actor, &snodo.SubscriptionEvent{Subscription: s.outer, Event: ev})
					continue
				}
				if waiting, ok := s.bytes.Admit(len(s.events), len(ev.Params), s.maxBytes); !ok {
					why = fmt.Errorf("%w: the subscription on %s has %d bytes of events waiting for a slow reader, and the next has %d (bound %d bytes); read Events faster or raise the queue bound",
						snodo.ErrSubscriptionQueueFull, s.c.name, waiting, len(ev.Params), s.maxBytes)
					break loop
				}
				select {
				case s.events <- ev:
					s.bytes.Sent(len(ev.Params))
					traceQueued(s.trace, len(s.events))
					s.traceEvent(ev)
				default:
					why = fmt.Errorf("%w: the subscription on %s has %d events waiting for a slow reader; read Events faster or raise the queue bound",
						snodo.ErrSubscriptionQueueFull, s.c.name, cap(s.events))
					break loop
				}
			case kindEnd:
				why, tellHost = endError(m), false
				break loop
			}
		case <-keepalive.C:
			s.control1(opKeepalive)
		case <-gone:
			why, tellHost = closedErr(fmt.Sprintf("subscription on %s: its host is gone (NATS holds no connection of it; silent for %s)",
				s.c.name, time.Since(heardAt).Round(time.Millisecond)), ErrHostGone), false
			break loop
		case <-watchdog.C:
			silence := time.Since(heardAt)
			if s.c.nc.IsConnected() && silence < hostSilenceCap(beat) {
				s.c.suspect(watch) // gone answers; look again in a beat
				watchdog.Reset(beat)
				continue
			}
			cause := "NATS still holds its connection: starved or cut off"
			if !s.c.nc.IsConnected() {
				cause = "NATS unreachable (reconnecting)"
			}
			why, tellHost = closedErr(fmt.Sprintf("subscription on %s: the host sent nothing for %s (%s)",
				s.c.name, silence.Round(time.Millisecond), cause), ErrHostGone), false
			break loop
		case err := <-s.quit:
			why = err
			break loop
		case <-s.owner.Done():
			why = ownerLeft(s.owner)
			break loop
		}
	}
	if unwatch != nil {
		unwatch()
	}
	if tellHost {
		s.control1(opClose)
	}
	s.c.unregister(s.token)
	traceEnd(s.trace, why)
	// Done first: a reader that sees Events close reads the final Err
	// (Err is nil until Done closes).
	s.Finish(why)
	close(s.events)
	if s.actor != nil {
		s.sys.Root.Send(s.actor, &snodo.SubscriptionEnded{Subscription: s.outer, Err: why})
	}
}

// traceEvent records an event of the MCP server's as a local
// subscription's queued event is recorded (its SubscriptionTrace's Event).
// A resubscribed marker is the host's, not the server's: no span (it is
// in the queue depth all the same: it waits for the reader).
func (s *hosted) traceEvent(ev snodo.Event) {
	if s.trace != nil && ev.Method != supervisor.ResubscribedMethod {
		s.trace.Event(ev)
	}
}

// control1 sends one control operation to the subscription's host.
func (s *hosted) control1(op string) {
	s.mu.Lock()
	subject, id := s.control, s.id
	s.mu.Unlock()
	m := nats.NewMsg(subject)
	m.Header.Set(hdrOp, op)
	m.Header.Set(hdrSub, id)
	_ = s.c.nc.PublishMsg(m)
}

// stop ends the subscription with why (the first reason wins).
func (s *hosted) stop(why error) {
	select {
	case s.quit <- why:
	default:
	}
}

// Events delivers the events in order and is closed once the
// subscription has ended (after Done: Err is final by then). A reader that falls behind by more than the
// queue bound (snodo.MaxQueued) ends it
// with snodo.ErrSubscriptionQueueFull.
// With ListenTo it only closes: the events go to the actor.
func (s *hosted) Events() <-chan snodo.Event { return s.events }

// ID is the listen request's id between this client and the host (the
// host's server knows it by another).
func (s *hosted) ID() int64 { return s.reqID }

// Acknowledged is what the host's MCP server agreed to honour.
func (s *hosted) Acknowledged() snodo.Filter {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.acked
	f.ResourceSubscriptions = append([]string(nil), f.ResourceSubscriptions...)
	return f
}

// Host is the id of the host serving the subscription (see Host.ID).
func (s *hosted) Host() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host
}

// Close tells the host to cancel the subscription on its MCP server and
// returns once it has ended here. It always returns nil.
func (s *hosted) Close() error {
	s.stop(snodo.ErrSubscriptionClosed)
	<-s.Done()
	return nil
}

// traceQueued records the queue depth when the subscription is measured.
func traceQueued(t connopts.SubscriptionTrace, depth int) {
	if t != nil {
		t.Queued(depth)
	}
}

// traceEnd ends the subscription's span and measurements, if any.
func traceEnd(t connopts.SubscriptionTrace, err error) {
	if t != nil {
		t.End(err)
	}
}
