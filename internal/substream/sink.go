package substream

import (
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo/internal/sentinel"
)

// Notification methods with a meaning for the subscription itself.
const (
	methodAcknowledged = "notifications/subscriptions/acknowledged"
	methodCancelled    = "notifications/cancelled"
)

// sink receives the notifications the connection correlates to the
// listen request. It runs on the connection's reader goroutine, in the
// order the server sent them, and never blocks.
func (s *Subscription) sink(method string, params json.RawMessage) {
	switch method {
	case methodAcknowledged:
		s.acknowledge(params)
	case methodCancelled:
		s.teardown(params)
	default:
		s.enqueue(Event{Method: method, Params: params})
	}
}

func (s *Subscription) acknowledge(params json.RawMessage) {
	var p struct {
		Notifications Filter `json:"notifications"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		s.opts.Logger.Warn("snodo: malformed subscription acknowledgement; taking it as acknowledging nothing",
			"subscription", s.ID(), "error", err)
	}
	s.mu.Lock()
	if s.abandoned {
		s.mu.Unlock()
		s.opts.Logger.Warn("snodo: ignored an acknowledgement that came after Open stopped waiting for it", "subscription", s.ID())
		return
	}
	if s.isAcked || s.ended {
		s.mu.Unlock()
		s.opts.Logger.Warn("snodo: ignored a second acknowledgement of a subscription", "subscription", s.ID())
		return
	}
	s.isAcked = true
	s.ackFilter = p.Notifications
	s.mu.Unlock()
	close(s.acked)
}

// teardown: the server sent notifications/cancelled for the listen request.
func (s *Subscription) teardown(params json.RawMessage) {
	var p struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(params, &p)
	reason := "no reason given"
	if p.Reason != "" {
		reason = p.Reason
	}
	s.end(fmt.Errorf("%w (%s); listen again to resume receiving events", sentinel.ErrSubscriptionTeardown, reason))
}

func (s *Subscription) enqueue(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended || s.full:
		return // the subscription is ending; its end says why
	case !s.isAcked:
		s.opts.Logger.Warn("snodo: dropped a notification sent before the subscription was acknowledged (the server broke the subscription protocol)",
			"subscription", s.ID(), "method", ev.Method)
		return
	}
	if waiting, ok := s.bytes.Admit(len(s.events), len(ev.Params), s.opts.MaxQueueBytes); !ok {
		s.overflow(fmt.Errorf("%w: subscription %d has %d bytes of events waiting for a slow reader, and the next has %d (bound %d bytes); read Events faster or raise the queue bound",
			sentinel.ErrSubscriptionQueueFull, s.ID(), waiting, len(ev.Params), s.opts.MaxQueueBytes))
		return
	}
	select {
	case s.events <- ev:
		s.bytes.Sent(len(ev.Params))
		if s.opts.Queued != nil {
			s.opts.Queued(s.ID(), ev.Method, ev.Params, len(s.events))
		}
	default:
		s.overflow(fmt.Errorf("%w: subscription %d has %d events waiting for a slow reader; read Events faster or raise the queue bound",
			sentinel.ErrSubscriptionQueueFull, s.ID(), cap(s.events)))
	}
}

// overflow ends the subscription because its queue passed a bound. The
// caller holds s.mu.
func (s *Subscription) overflow(err error) {
	s.full = true
	s.end(err)
}
