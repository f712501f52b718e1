package substream

import (
	"fmt"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/sentinel"
)

// pump posts queued events to the owner actor (Options.Post), then the
// end. Posting to an ordinary (unbounded) mailbox never blocks; with a
// bounded mailbox the pump waits for room while the queue behind it fills
// up to its bound.
func (s *Subscription) pump() {
	post := s.opts.Post
	if first := s.opts.PostFirst; first != nil {
		select {
		case <-s.acked:
		case <-s.done:
		}
		s.mu.Lock()
		acked := s.isAcked
		s.mu.Unlock()
		if acked {
			first(s)
		}
	}
	for ev := range s.events {
		post(s, &ev, nil)
	}
	s.mu.Lock()
	acked, err := s.isAcked, s.err
	s.mu.Unlock()
	if acked {
		post(s, nil, err)
	}
}

// watchOwner cancels the subscription when its owner actor terminates.
// finish calls the returned stop.
func watchOwner(s *Subscription) (stop func()) {
	owner := s.opts.Actor
	return snodoactor.WatchOwner(s.opts.System, owner, func() {
		s.end(fmt.Errorf("%w: actor %s terminated", sentinel.ErrOwnerExited, owner.Id))
	})
}
