// Package listening is how the packages that serve a subscription in
// their own way (supervisor: across restarts and pool moves; remote:
// through a host) hand it to the user as the one *snodo.Subscription,
// typed: snodo.Subscription is a defined type over Sub, so a sibling
// makes one with (*snodo.Subscription)(listening.New(impl)) and reads
// its Impl back with listening.ImplOf((*listening.Sub)(sub)), and
// snodo.ListenOption is Option, read with SettingsOf.
package listening

import (
	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/origins"
	"github.com/snodo/snodo/subscription"
)

// Message is a message snodo sends an actor: every one is marked for
// protoactor's dead-letter logging.
type Message interface{ IgnoreDeadLetterLogging() }

// Settings are the values a subscription's options (snodo.ListenTo,
// snodo.MaxQueued) set.
type Settings struct {
	Actor         *protoactor.PID // ListenTo: nil delivers on the Events channel
	MaxQueue      int             // MaxQueued's events: 0 the default
	MaxQueueBytes int             // MaxQueued's bytes: 0 the default
	// Opened, set when a *snodo.ListenCall opens the subscription, builds
	// the message (its *snodo.ListenReply) Actor receives first, once the
	// subscription is open and before its first event: every Listen that
	// delivers to an actor sends it. nil: none.
	Opened func(sub *Sub, origin origins.Origin) Message
}

// Option is one subscription option (snodo.ListenOption): it sets some
// of the Settings, or says why it cannot. The zero Option sets nothing.
type Option struct {
	set func(*Settings) error
}

// NewOption is the option that runs set.
func NewOption(set func(*Settings) error) Option { return Option{set: set} }

// SettingsOf applies opts in order; the first invalid one is an error.
func SettingsOf(opts []Option) (Settings, error) {
	var s Settings
	for _, o := range opts {
		if o.set == nil {
			continue
		}
		if err := o.set(&s); err != nil {
			return Settings{}, err
		}
	}
	return s, nil
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

// Sub is what a snodo.Subscription holds: the Impl serving it.
type Sub struct {
	impl Impl
}

// New is the subscription impl serves.
func New(impl Impl) *Sub { return &Sub{impl: impl} }

// Set makes impl serve s, a Sub made before impl was (with new), before
// s is handed to anyone else.
func Set(s *Sub, impl Impl) { s.impl = impl }

// ImplOf is the Impl serving s.
func ImplOf(s *Sub) Impl { return s.impl }
