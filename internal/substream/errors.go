package substream

import ()

// A subscription's Err wraps one of snodo's sentinels
// (snodo.ErrSubscriptionClosed, snodo.ErrSubscriptionTeardown,
// snodo.ErrSubscriptionQueueFull: see the package doc); package snodo
// exports them, so one import tells every end apart.

// localEnd marks a cancellation cause set by this package, so that it can
// be told apart from the cause of the owner's context.
type localEnd struct{ err error }

func (e *localEnd) Error() string { return e.err.Error() }
func (e *localEnd) Unwrap() error { return e.err }
