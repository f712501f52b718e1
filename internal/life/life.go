package life

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/exitsig"
	"github.com/snodo/snodo/internal/guardian"
	"github.com/snodo/snodo/internal/sentinel"
)

// Life is the life of an actor that owns something a restart would lose
// (a child process, a supervised server, a pool of them). It is the one
// way such an actor stops:
//
//   - one reason, the first one recorded wins (Stop, Record);
//   - an owner link: an owner context (LinkContext) or an owner actor
//     (Owner, watched from Started), or both;
//   - an exit signal (Exit) stops it with the signal's reason;
//   - the system's Shutdown stops it, as its owner's end would
//     (snodo.ErrOwnerExited): protoactor-go's Shutdown stops no actor, but
//     snodo's leave nothing running;
//   - a panic in its Receive is recovered, logged, and stops it with
//     snodo.ErrActorPanicked: it never restarts with empty state while what it
//     owns lives on;
//   - the messages still in its mailbox when it stops become dead
//     letters, as those sent after the stop do (protoactor-go drops
//     them), so a call message is always answered
//     (snodo answers the call messages among the dead letters).
//
// The actor's own Receive sees every message but the exit signal and the
// owner's Terminated; its Stopping comes after the reason is settled
// (snodo.ErrActorStopped when none was given), so it can read Reason. Set the
// fields before Spawn; the methods are safe from any goroutine.
type Life struct {
	Name   string          // for logs: "connection", "supervisor", "pool"
	Logger *slog.Logger    // receives the panic; nil discards it
	Owner  *protoactor.PID // an owner actor, or nil
	// Parent, when set, spawns the actor as its child (it must be the
	// context of the actor running Receive now): the actor then shows in
	// the parent's Children and stops with it, as protoactor-go's own
	// children do. nil spawns it at the root.
	Parent protoactor.SpawnerContext

	mu        sync.Mutex
	reason    error
	system    *protoactor.ActorSystem
	pid       *protoactor.PID
	parent    *protoactor.PID // the parent it was spawned under, nil at the root
	unwatch   func() bool     // releases the owner context's AfterFunc
	ending    bool            // Stopping has run
	ownerGone bool            // the owner's Terminated came

	stopped atomic.Bool // Stopped has run: later mail is dead letters (lateMail)
}

// Spawn starts the actor, whose messages go to receive, under the
// stopOnFailure guardian (a failing actor stops, never restarts). Messages still in its mailbox when it stops
// become dead letters, as messages sent after it stopped do (its mailbox
// passes them on), so a call message queued behind the stop is still
// answered (snodo answers the call messages among the dead letters).
func (l *Life) Spawn(system *protoactor.ActorSystem, prefix string, receive protoactor.ReceiveFunc) *protoactor.PID {
	run := func(ctx protoactor.Context) { l.receive(ctx, receive) }
	mailbox := protoactor.WithMailbox(protoactor.Unbounded(lateMail{l}))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.system = system
	watchShutdown(system, l)
	if l.Parent != nil {
		// A child takes no guardian (protoactor-go panics): its failures
		// would go to its parent's strategy, but receive recovers them.
		l.parent = l.Parent.Self()
		if l.Owner.Equal(l.parent) {
			// A child stops with its parent: no watch, whose Terminated
			// would reach the child gone by then (a dead letter).
			l.Owner = nil
		}
		l.pid = l.Parent.SpawnPrefix(protoactor.PropsFromFunc(run, mailbox), prefix)
		l.Parent = nil // valid only during the parent's Receive
		return l.pid
	}
	l.pid = system.Root.SpawnPrefix(protoactor.PropsFromFunc(run, protoactor.WithGuardian(guardian.StopOnFailure), mailbox), prefix)
	return l.pid
}

// LinkContext makes ctx an owner, after Spawn: when it is done the actor
// stops with snodo.ErrOwnerExited wrapping the context's cause (at once if it
// is done already). The watch is context.AfterFunc, released as the actor
// stops, so it costs no goroutine while it waits. A context that can
// never be done (its Done is nil, as context.Background's) is no owner:
// nothing is watched and nothing kept.
func (l *Life) LinkContext(ctx context.Context) {
	if ctx.Done() == nil {
		return
	}
	stop := context.AfterFunc(ctx, func() {
		l.Stop(fmt.Errorf("%w: %w", sentinel.ErrOwnerExited, context.Cause(ctx)))
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ending {
		stop() // the actor stopped first: nothing left to watch for
		return
	}
	l.unwatch = stop
}

// PID is the actor, once Spawn has returned.
func (l *Life) PID() *protoactor.PID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pid
}

// Record records why the actor stops, unless a reason already is.
func (l *Life) Record(reason error) {
	l.mu.Lock()
	if l.reason == nil {
		l.reason = reason
	}
	l.mu.Unlock()
}

// Reason is the recorded reason, nil while none is.
func (l *Life) Reason() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

// Stop records reason and stops the actor. Stop is a system message: it
// overtakes queued mail. Any goroutine may call it, the actor's own
// Receive included (the actor stops once Receive returns). Once
// the actor is stopping, Stop only records: a Stop sent to an actor that
// is gone would be a dead letter in the system's log.
func (l *Life) Stop(reason error) {
	l.Record(reason)
	l.mu.Lock()
	system, pid, ending := l.system, l.pid, l.ending
	l.mu.Unlock()
	if !ending && pid != nil { // before Spawn there is nothing to stop
		system.Root.Stop(pid)
	}
}

// stopSelf is Stop from inside the actor's Receive.
func (l *Life) stopSelf(ctx protoactor.Context, reason error) {
	l.Record(reason)
	ctx.Stop(ctx.Self())
}

func (l *Life) receive(ctx protoactor.Context, next protoactor.ReceiveFunc) {
	defer func() {
		if r := recover(); r != nil {
			if l.Logger != nil {
				l.Logger.Error("snodo: "+l.Name+" actor panicked; stopping it", "panic", r)
			}
			l.stopSelf(ctx, fmt.Errorf("%w: %v", sentinel.ErrActorPanicked, r))
		}
	}()
	switch msg := ctx.Message().(type) {
	case *protoactor.Started:
		if l.Owner != nil {
			ctx.Watch(l.Owner)
		}
	case *protoactor.Terminated:
		if l.Owner != nil && msg.Who.Equal(l.Owner) {
			l.mu.Lock()
			l.ownerGone = true
			l.mu.Unlock()
			l.stopSelf(ctx, fmt.Errorf("%w: actor %s terminated", sentinel.ErrOwnerExited, l.Owner.Id))
			return
		}
	case *exitsig.Signal:
		reason := msg.Reason
		if reason == nil {
			reason = sentinel.ErrActorStopped
		}
		l.stopSelf(ctx, reason)
		return
	case *protoactor.Stopping:
		l.mu.Lock()
		switch {
		case l.reason == nil && l.parent != nil:
			// Most likely its parent stopping (a child stops first).
			l.reason = fmt.Errorf("%w (%w: a child of %s stops with it)", sentinel.ErrActorStopped, sentinel.ErrOwnerExited, l.parent.Id)
		case l.reason == nil:
			l.reason = sentinel.ErrActorStopped
		}
		unwatch, ownerGone := l.unwatch, l.ownerGone
		l.ending = true
		l.mu.Unlock()
		if unwatch != nil {
			unwatch()
		}
		if l.Owner != nil && !ownerGone {
			// Otherwise the owner's Terminated would later be sent to this
			// actor, gone by then: a dead letter in the system's log.
			ctx.Unwatch(l.Owner)
		}
	case *protoactor.Stopped:
		l.stopped.Store(true)
		unwatchShutdown(ctx.ActorSystem(), l)
	}
	next(ctx)
}

// lateMail passes on to the system's dead letters the user messages the
// actor's mailbox takes after the actor stopped. protoactor-go drops
// those without a trace (only messages sent after the stop become dead
// letters), so a call message that was queued behind the stop would never
// be answered. It runs on the mailbox's goroutine, after each message.
type lateMail struct{ l *Life }

func (lateMail) MailboxStarted()   {}
func (lateMail) MessagePosted(any) {}
func (lateMail) MailboxEmpty()     {}

func (m lateMail) MessageReceived(msg any) {
	if !m.l.stopped.Load() {
		return
	}
	switch msg.(type) {
	case protoactor.SystemMessage, *protoactor.SuspendMailbox, *protoactor.ResumeMailbox:
		return // handled by protoactor-go itself, stopped or not
	}
	m.l.mu.Lock()
	system, pid := m.l.system, m.l.pid
	m.l.mu.Unlock()
	system.DeadLetter.SendUserMessage(pid, msg)
}
