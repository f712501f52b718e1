package subscription

import (
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"

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
	root := s.opts.System.Root
	for ev := range s.events {
		root.Send(s.opts.Actor, &EventMsg{Subscription: s, Event: ev})
	}
	s.mu.Lock()
	acked, err := s.isAcked, s.err
	s.mu.Unlock()
	if acked {
		root.Send(s.opts.Actor, &EndMsg{Subscription: s, Err: err})
	}
}

// spawnWatcher starts a small actor that watches the owner actor and
// cancels the subscription when it terminates (a root context cannot
// watch, and protoactor futures race). finish stops it.
func spawnWatcher(s *Subscription) *protoactor.PID {
	owner := s.opts.Actor
	props := protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			ctx.Watch(owner)
		case *protoactor.Terminated:
			if msg.Who.Equal(owner) {
				s.end(fmt.Errorf("%w: actor %s terminated", ErrOwnerExited, owner.Id))
			}
		case *protoactor.Stopping:
			ctx.Unwatch(owner)
		}
	}, protoactor.WithGuardian(snodoactor.StopOnFailure))
	return s.opts.System.Root.SpawnPrefix(props, "snodo-sub-watch")
}
