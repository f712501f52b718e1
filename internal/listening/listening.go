// Package listening is how the packages that serve a subscription in
// their own way (supervisor: across restarts and pool moves; remote:
// through a host) hand it to the user as the one *snodo.Subscription.
// Package snodo registers the wrapper at init; nothing else is global.
package listening

import (
	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/subscription"
)

// Settings are the values a subscription's options (snodo.ListenTo,
// snodo.MaxQueued) set.
type Settings struct {
	Actor         *protoactor.PID // ListenTo: nil delivers on the Events channel
	MaxQueue      int             // MaxQueued's events: 0 the default
	MaxQueueBytes int             // MaxQueued's bytes: 0 the default
	// Opened, set when a *snodo.ListenCall opens the subscription, builds
	// the message (its *snodo.ListenReply) Actor receives first, once the
	// subscription (a *snodo.Subscription) is open and before its first
	// event: every Listen that delivers to an actor sends it. nil: none.
	Opened func(sub, origin any) any // origin: a snodo.Origin
}

// Impl serves a *snodo.Subscription: its methods are the Subscription's,
// with the meanings documented there.
type Impl interface {
	ID() int64
	Acknowledged() subscription.Filter
	Events() <-chan subscription.Event
	Done() <-chan struct{}
	Err() error
	Close() error
}

var (
	wrap       func(Impl) any
	unwrap     func(any) Impl
	settingsOf func(any) (Settings, error)
)

// Register is called once, by package snodo's init: w wraps an Impl as
// a *snodo.Subscription, u returns the Impl of one, s applies a
// []snodo.ListenOption.
func Register(w func(Impl) any, u func(any) Impl, s func(any) (Settings, error)) {
	wrap, unwrap, settingsOf = w, u, s
}

// SettingsOf applies opts ([]snodo.ListenOption) in order; the first
// invalid one is an error.
func SettingsOf(opts any) (Settings, error) { return settingsOf(opts) }

// Wrap is impl as a *snodo.Subscription (T).
func Wrap[T any](impl Impl) T { return wrap(impl).(T) }

// Unwrap is the Impl serving sub, a *snodo.Subscription.
func Unwrap(sub any) Impl { return unwrap(sub) }
