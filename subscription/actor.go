package subscription

import (
	"fmt"

	snodoactor "github.com/snodo/snodo/actor"
)

// EventMsg is what the actor given as Options.Actor receives for each
// event, in order.
type EventMsg struct {
	Subscription *Subscription
	Event
}

// EndMsg is the last message the actor given as Options.Actor receives
// from a subscription, after its last event: Err is Subscription.Err()
// (nil after a graceful end). It is not sent when Open failed.
type EndMsg struct {
	Subscription *Subscription
	Err          error
}

// IgnoreDeadLetterLogging keeps events for a stopped actor out of the
// dead-letter log.
func (*EventMsg) IgnoreDeadLetterLogging() {}

// IgnoreDeadLetterLogging keeps ends for a stopped actor out of the
// dead-letter log.
func (*EndMsg) IgnoreDeadLetterLogging() {}

// pump posts queued events to the owner actor, then the end. Posting to an
// ordinary (unbounded) mailbox never blocks; with a bounded mailbox the
// pump waits for room while the queue behind it fills up to its bound.
func (s *Subscription) pump() {
	root, message := s.opts.System.Root, s.opts.Message
	if message == nil {
		message = defaultMessage
	}
	for ev := range s.events {
		root.Send(s.opts.Actor, message(s, &ev, nil))
	}
	s.mu.Lock()
	acked, err := s.isAcked, s.err
	s.mu.Unlock()
	if acked {
		root.Send(s.opts.Actor, message(s, nil, err))
	}
}

// defaultMessage is *EventMsg for an event, *EndMsg for the end.
func defaultMessage(s *Subscription, ev *Event, err error) any {
	if ev != nil {
		return &EventMsg{Subscription: s, Event: *ev}
	}
	return &EndMsg{Subscription: s, Err: err}
}

// watchOwner cancels the subscription when its owner actor terminates.
// finish calls the returned stop.
func watchOwner(s *Subscription) (stop func()) {
	owner := s.opts.Actor
	return snodoactor.WatchOwner(s.opts.System, owner, func() {
		s.end(fmt.Errorf("%w: actor %s terminated", snodoactor.ReasonOwnerExited, owner.Id))
	})
}
