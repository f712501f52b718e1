package actor

import (
	"errors"
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

// quiet, embedded in a message type, keeps that message out of
// protoactor's dead-letter log when its receiver is gone: the methods
// protoactor looks for are plumbing, not part of the message's API.
type quiet struct{}

// IgnoreDeadLetterLogging marks the message for protoactor.
func (quiet) IgnoreDeadLetterLogging() {}
