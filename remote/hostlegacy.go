package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/seam"
	"github.com/snodo/snodo/subscription"
)

// A legacy-era server has no subscriptions/listen: its list changes come
// unasked, as plain notifications on the connection. A host serves a
// remote Listen on such a server itself: it acknowledges the list changes
// the server declares (capabilities' listChanged) and forwards every such
// notification any member of its pool sends, for as long as the
// subscription lasts. It watches the members' connections (a restarted
// member's new connection is watched from the next heartbeat on; what it
// sent before is not forwarded). Resource updates need
// resources/subscribe, which a host keeps for its own program: they are
// not offered.

// legacyQueue bounds the notifications waiting to be published for one
// subscription; past it the subscription ends with subscription.ErrQueueFull.
const legacyQueue = 256

// legacyFilter is what f asks for that a legacy server with caps sends.
func legacyFilter(f snodo.Filter, caps snodo.ServerCapabilities) snodo.Filter {
	return snodo.Filter{
		ToolsListChanged:     f.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   f.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: f.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged,
	}
}

// wants reports whether a notification is one f asks for.
func wants(f snodo.Filter, method string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return f.ToolsListChanged
	case "notifications/prompts/list_changed":
		return f.PromptsListChanged
	case "notifications/resources/list_changed":
		return f.ResourcesListChanged
	}
	return false
}

// memberTaps watches the connections of a pool's members.
type memberTaps struct {
	fn   func(method string, params []byte)
	taps map[*snodo.Client]func()
}

// refresh watches each member's current connection, and stops watching
// the ones that are no longer current. It returns the capabilities of a
// connected member (ok false when none is connected).
func (t *memberTaps) refresh(s *served) (caps snodo.ServerCapabilities, ok bool) {
	current := map[*snodo.Client]bool{}
	for _, m := range s.pool.Members() {
		c := m.Current()
		if c == nil {
			continue
		}
		current[c] = true
		if !ok {
			caps, ok = c.Capabilities(), true
		}
		if t.taps[c] == nil {
			t.taps[c] = seam.TapNotifications(c, t.fn)
		}
	}
	for c, stop := range t.taps {
		if !current[c] {
			stop()
			delete(t.taps, c)
		}
	}
	return caps, ok
}

func (t *memberTaps) stop() {
	for c, stop := range t.taps {
		stop()
		delete(t.taps, c)
	}
}

// runLegacyListen serves a subscription on a legacy server's pool (see
// above) until the caller closes it or goes away, or the host drains.
// The caller of runLegacyListen has registered hs and started the beats
// (stopBeats ends them).
func (h *Host) runLegacyListen(ctx context.Context, cancel context.CancelCauseFunc, s *served, events string, hs *hostSub, beat time.Duration, f snodo.Filter, stopBeats func()) {
	queue := make(chan snodo.Event, legacyQueue)
	var mu sync.Mutex
	var acked snodo.Filter
	overflow := make(chan struct{})
	var overflowOnce sync.Once
	taps := &memberTaps{taps: map[*snodo.Client]func(){}, fn: func(method string, params []byte) {
		mu.Lock()
		ok := wants(acked, method)
		mu.Unlock()
		if !ok {
			return
		}
		select {
		case queue <- snodo.Event{Method: method, Params: append(json.RawMessage(nil), params...)}:
		default:
			overflowOnce.Do(func() { close(overflow) })
		}
	}}
	defer taps.stop()
	caps, connected := taps.refresh(s)
	mu.Lock()
	acked = legacyFilter(f, caps)
	mu.Unlock()
	if !connected || !acked.ToolsListChanged && !acked.PromptsListChanged && !acked.ResourcesListChanged {
		stopBeats()
		why := fmt.Sprintf("host %s: %v", h.label, snodo.ErrListenUnsupported)
		if !connected {
			why = fmt.Sprintf("host %s: no member of %s is connected now (restarting)", h.label, s.name)
		} else {
			why += " (and it declares none of the list changes asked for)"
		}
		s.listenStats.fail(why)
		m := h.endMsg(events, &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: why}, true)
		if connected {
			m.Header.Set(hdrNoListen, "1")
		}
		h.publish(m)
		return
	}
	ack := nats.NewMsg(events)
	ack.Header.Set(hdrKind, kindAck)
	ack.Header.Set(hdrHost, h.id)
	ack.Header.Set(hdrControl, controlSubject(h.cfg.prefix, h.id))
	ack.Header.Set(hdrSub, hs.id)
	ack.Data, _ = json.Marshal(acked)
	h.publish(ack)

	watch := time.NewTicker(beat)
	defer watch.Stop()
	silence := time.Duration(missedBeats)*beat + beat/2
	var why error
loop:
	for {
		select {
		case ev := <-queue:
			if max := h.reply.MaxPayload(); int64(len(ev.Params)) > max-1024 {
				why = fmt.Errorf("a %s event of %d bytes is more than the NATS server's max_payload (%d); raise max_payload", ev.Method, len(ev.Params), max)
				break loop
			}
			m := nats.NewMsg(events)
			m.Header.Set(hdrKind, kindEvent)
			m.Header.Set(hdrMethod, ev.Method)
			m.Data = ev.Params
			h.publish(m)
		case <-overflow:
			why = fmt.Errorf("%w: more than %d notifications of %s waited to be sent", subscription.ErrQueueFull, legacyQueue, s.name)
			break loop
		case <-watch.C:
			if time.Since(time.Unix(0, hs.lastSeen.Load())) > silence {
				why = errCallerGone
				break loop
			}
			taps.refresh(s)
		case <-ctx.Done():
			why = context.Cause(ctx)
			break loop
		}
	}
	cancel(why)
	stopBeats()
	switch {
	case errors.Is(why, errCallerGone):
		h.cfg.logger.Info("remote: subscription cancelled: its caller went away", "server", s.name, "sub", hs.id)
		h.end(events, &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: why.Error()}, true)
	case errors.Is(why, subscription.ErrClosed):
		h.end(events, nil, false)
	default:
		msg := "host " + h.label + ": " + why.Error()
		if !errors.Is(why, errDraining) {
			s.listenStats.fail(msg)
		}
		h.end(events, &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: msg}, true)
	}
}
