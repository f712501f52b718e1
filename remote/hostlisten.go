package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/pin"
)

// hostSub is one subscription a host runs for a remote caller.
type hostSub struct {
	id       string
	cancel   context.CancelCauseFunc
	lastSeen atomic.Int64 // unix nanoseconds of the caller's last keep-alive
}

// onListen takes one subscription request from the service endpoint.
func (h *Host) onListen(s *served, r *nats.Msg) {
	h.admit(r, &h.subsHeld, &s.listenStats, func(events string, hdr nats.Header, data []byte) {
		h.runListen(s, events, hdr, data)
	})
}

// runListen opens the subscription on the pool and forwards its events
// to the caller's subject until it ends, the caller closes it or stops
// sending keep-alives, or the host drains.
func (h *Host) runListen(s *served, events string, hdr nats.Header, data []byte) {
	env, err := jsonrpc.Scan(data)
	var p struct {
		Notifications snodo.Filter `json:"notifications"`
	}
	if err == nil && env.Kind == jsonrpc.KindRequest && env.Params != nil {
		err = json.Unmarshal(env.Params, &p)
	} else if err == nil {
		err = errors.New("not a JSON-RPC request with params")
	}
	if err != nil {
		why := "remote: bad subscriptions/listen request: " + err.Error()
		s.listenStats.fail(why)
		h.end(events, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: why}, true)
		return
	}
	beat := beatOf(hdr)
	s.subsIn.Add(1)
	defer s.subsIn.Add(-1)
	hs := &hostSub{id: nuid.Next()}
	hs.lastSeen.Store(time.Now().UnixNano())
	ctx, cancel := context.WithCancelCause(extractTrace(h.subCtx, hdr))
	defer cancel(nil)
	hs.cancel = cancel
	h.mu.Lock()
	h.subs[hs.id] = hs
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.subs, hs.id)
		h.mu.Unlock()
	}()

	stopBeats := h.beatSubscription(events, beat)
	// In either era: on a legacy server the pool's Listen serves it with
	// the list changes and resources/subscribe. A legacy-era caller's
	// goes to the pool its calls go to (legacyListen).
	sub, err := h.listenOn(ctx, s, hdr, p.Notifications)
	if err != nil {
		stopBeats()
		e, local := rpcError(err)
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			e, local = &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: cause.Error()}, true
		}
		s.listenStats.fail(e.Message)
		end := h.endMsg(events, e, local)
		if errors.Is(err, pin.ErrLost) {
			end.Header.Set(hdrPinLost, "1") // the caller's pin is lost (pin.go)
		}
		h.publish(end)
		return
	}
	ack := nats.NewMsg(events)
	ack.Header.Set(hdrKind, kindAck)
	ack.Header.Set(hdrHost, h.id)
	ack.Header.Set(hdrControl, controlSubject(h.cfg.prefix, h.id))
	ack.Header.Set(hdrSub, hs.id)
	ack.Data, _ = json.Marshal(sub.Acknowledged())
	h.publish(ack)

	watch := time.NewTicker(beat)
	defer watch.Stop()
	lastTick, heardFloor := time.Now(), time.Time{}
	silence := time.Duration(missedBeats)*beat + beat/2
	var why error
	oversized := false
	ended := ctx.Done()
loop:
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				break loop
			}
			if oversized {
				continue // none after the lost one: Events closes next
			}
			if max := h.reply.MaxPayload(); int64(len(ev.Params)) > max-1024 {
				// It cannot reach the caller: end the subscription
				// rather than lose the event without a word.
				oversized = true
				if why == nil {
					why = fmt.Errorf("a %s event of %d bytes is more than the NATS server's max_payload (%d); raise max_payload",
						ev.Method, len(ev.Params), max)
					cancel(why)
				}
				continue
			}
			m := nats.NewMsg(events)
			m.Header.Set(hdrKind, kindEvent)
			m.Header.Set(hdrMethod, ev.Method)
			m.Data = ev.Params
			h.publish(m)
		case <-watch.C:
			// A tick well past its time (the clock now, not the tick's
			// value: that is when it was due) means this host was itself
			// late (a starved or stopped machine): the keep-alives that
			// came meanwhile may still wait to be read, so the caller's
			// silence counts from now.
			now := time.Now()
			if now.Sub(lastTick) > beat+beat/2 {
				heardFloor = now
			}
			lastTick = now
			seen := time.Unix(0, hs.lastSeen.Load())
			if seen.Before(heardFloor) {
				seen = heardFloor
			}
			if why == nil && now.Sub(seen) > silence {
				cancel(errCallerGone) // ended fires next
			}
		case <-ended:
			ended = nil
			if why == nil {
				why = context.Cause(ctx)
			}
			// ctx owns the subscription: its end cancels the listen on
			// the MCP server, and Events closes.
		}
	}
	stopBeats()
	if why == nil && ctx.Err() != nil {
		// The subscription ended because ctx did (the caller's close, its
		// silence, a drain), and its Events closed before this loop saw
		// ctx's end: the end is ctx's, not the subscription's own.
		why = context.Cause(ctx)
	}
	switch {
	case why != nil && errors.Is(why, errCallerGone):
		h.cfg.logger.Info("remote: subscription cancelled: its caller went away", "server", s.name, "sub", hs.id)
		h.end(events, &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: why.Error()}, true)
	case why != nil && errors.Is(why, snodo.ErrSubscriptionClosed):
		h.end(events, nil, false) // the caller closed it: it knows why
	case why != nil:
		msg := "host " + h.label + ": " + why.Error()
		if !errors.Is(why, errDraining) {
			s.listenStats.fail(msg) // a drain ends subscriptions on purpose
		}
		h.end(events, &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: msg}, true)
	case sub.Err() != nil:
		e, local := rpcError(sub.Err())
		s.listenStats.fail(e.Message)
		m := h.endMsg(events, e, local)
		if errors.Is(sub.Err(), snodo.ErrSubscriptionTeardown) {
			m.Header.Set(hdrTeardown, "1")
		}
		h.publish(m)
	default:
		h.end(events, nil, false)
	}
}

// listenOn opens the subscription on the pool that serves its caller:
// for a legacy-era caller (Snodo-Opts legacy) of a name with ServeLegacy,
// the legacy-era pool its calls go to, started now if need be, so that
// the resources it subscribes to are those of the servers its calls
// reach, and their updates and list changes come back to it; the name's
// pool otherwise.
func (h *Host) listenOn(ctx context.Context, s *served, hdr nats.Header, f snodo.Filter) (*snodo.Subscription, error) {
	if s.leg == nil || hdr.Get(hdrOpts) == "" {
		return s.pool.Listen(ctx, f)
	}
	o := callOptsOf(hdr)
	if !o.legacy {
		return s.pool.Listen(ctx, f)
	}
	return s.leg.listen(ctx, f, o)
}

// end sends a subscription's last message: why it ended (nil: gracefully).
func (h *Host) end(events string, e *jsonrpc.Error, local bool) {
	h.publish(h.endMsg(events, e, local))
}

// endMsg is a subscription's last message, for end to send.
func (h *Host) endMsg(events string, e *jsonrpc.Error, local bool) *nats.Msg {
	m := nats.NewMsg(events)
	m.Header.Set(hdrKind, kindEnd)
	m.Header.Set(hdrHost, h.id)
	if local {
		m.Header.Set(hdrLocal, "1")
	}
	if e != nil {
		m.Data, _ = json.Marshal(e)
	}
	return m
}

// onControl handles keep-alives and closes from subscribers, and
// keep-alives from callers of running calls.
func (h *Host) onControl(m *nats.Msg) {
	if m.Reply != "" && m.Header.Get(hdrOp) == opPing {
		_ = m.Respond(nil) // a caller suspecting this host: it lives
		return
	}
	if reply := m.Header.Get(hdrCall); reply != "" {
		h.mu.Lock()
		hc := h.calls[reply]
		h.mu.Unlock()
		if hc != nil {
			hc.lastSeen.Store(time.Now().UnixNano())
			hc.unheard.Store(0)
		}
		return
	}
	id := m.Header.Get(hdrSub)
	h.mu.Lock()
	hs := h.subs[id]
	h.mu.Unlock()
	if hs == nil {
		return
	}
	switch m.Header.Get(hdrOp) {
	case opKeepalive:
		hs.lastSeen.Store(time.Now().UnixNano())
	case opClose:
		hs.cancel(snodo.ErrSubscriptionClosed)
	}
}
