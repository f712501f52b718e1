package gateway

import (
	"errors"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/pin"
)

// followResource delivers the updates of a legacy session's resource
// subscription to its client until the client unsubscribes or the
// session ends. A subscription that ends on its own (the remote host
// that held it went away; a supervisor renews its own in place) is
// opened again, pausing 100 ms to 5 s between tries, and the client is
// then sent notifications/resources/updated for uri, since the resource
// may have changed meanwhile, as it is after a renewal in place.
func (s *session) followResource(uri string, sub *snodo.Subscription) {
	f := snodo.Filter{ResourceSubscriptions: []string{uri}}
	mayHaveChanged := jsonrpc.AppendNotification(nil, "notifications/resources/updated", append(jsonrpc.AppendString([]byte(`{"uri":`), uri), '}'))
	for {
		for ev := range sub.Events() {
			switch {
			case ev.Method == "notifications/resources/updated":
				s.deliver(jsonrpc.AppendNotification(nil, ev.Method, setMeta(ev.Params, nil)))
			case isResubscribed(ev.Method):
				s.deliver(mayHaveChanged)
			}
		}
		sub.Close()
		next := s.reopenResource(uri, sub, f)
		if next == nil {
			return
		}
		sub = next
		s.deliver(mayHaveChanged)
	}
}

// reopenResource opens the subscription for uri again while it is still
// the session's (ended stands registered: the client did not
// unsubscribe) and the session lives; nil once it is not.
func (s *session) reopenResource(uri string, ended *snodo.Subscription, f snodo.Filter) *snodo.Subscription {
	pause := 100 * time.Millisecond
	for {
		s.mu.Lock()
		mine := s.subs[uri] == ended
		s.mu.Unlock()
		if !mine {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		pause = min(2*pause, 5*time.Second)
		next, err := s.backend.Listen(s.pinned(s.ctx), f)
		if err != nil {
			if s.pin != nil && errors.Is(err, pin.ErrLost) {
				if !s.whole {
					// The server the session was pinned to is gone: the
					// session ends with it (its next request gets 404).
					s.h.sessions.remove(s)
					return nil
				}
				s.pin.Repin() // a stdio session moves to a live server
			}
			continue
		}
		s.mu.Lock()
		if s.subs[uri] != ended {
			s.mu.Unlock()
			next.Close()
			return nil
		}
		s.subs[uri] = next
		s.mu.Unlock()
		return next
	}
}
