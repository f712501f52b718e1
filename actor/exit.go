package actor

import (
	"errors"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Reasons an actor managed by snodo stops. They are sentinels: the errors
// callers see wrap them, so errors.Is works.
var (
	// ErrOwnerExited: the owner (a context or an actor) went away.
	ErrOwnerExited = errors.New("owner exited")
	// ErrStopped: the actor was stopped (Stop or Poison) without a reason.
	ErrStopped = errors.New("actor stopped")
	// ErrPanicked: the actor panicked and was stopped.
	ErrPanicked = errors.New("actor panicked")
)

// exitSignal asks an actor to stop with a reason, like an Erlang exit
// signal. Actors that understand it (a Life's) record Reason before
// stopping; others ignore it. Exit sends it.
type exitSignal struct {
	quiet
	Reason error
}

// Exit sends pid an exit signal with reason, like an Erlang exit signal:
// an actor under a Life (a connection, a supervised client, a pool, a
// router) records reason and stops; others ignore it. It returns at
// once; an actor that has already stopped ignores it, and a nil system or pid means no
// actor: nothing is sent. A nil reason means ErrStopped.
func Exit(system *protoactor.ActorSystem, pid *protoactor.PID, reason error) {
	if system == nil || pid == nil {
		return
	}
	if reason == nil {
		reason = ErrStopped
	}
	system.Root.Send(pid, &exitSignal{Reason: reason})
}

// quiet, embedded in a message type, keeps that message out of
// protoactor's dead-letter log when its receiver is gone: the methods
// protoactor looks for are plumbing, not part of the message's API.
type quiet struct{}

// IgnoreDeadLetterLogging marks the message for protoactor.
func (quiet) IgnoreDeadLetterLogging() {}
