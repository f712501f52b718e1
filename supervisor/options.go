package supervisor

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/supopts"
)

// Defaults for the options below, stated in their docs.
const (
	defaultMaxRestarts = 5                // restarts allowed within defaultWindow
	defaultWindow      = 30 * time.Second // the intensity window
	defaultMaxWait     = 60 * time.Second // how long a call waits for a restart without its own Timeout, and Shrink for calls

	// defaultShutdownGrace is how long a server has to exit once its
	// stdin is closed as supervision ends (Close, the owner's end, giving
	// up) before it is sent SIGTERM, and SIGKILL as long again after,
	// both to its process group: a supervisor owns its servers' whole
	// lives, so it leaves none running (snodo.WithShutdownGrace, given in
	// WithConnectOptions, sets another grace; 0 closes stdin only).
	defaultShutdownGrace = 2 * time.Second
)

// defaultBackoff is the restart delay used without WithBackoff: 100 ms,
// doubling to at most 10 s, ±20 % jitter.
var defaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second, Multiplier: 2, Jitter: 0.2}

// Option configures Connect and NewPool (for a pool, every member).
// Options validate their input: Connect returns the first option error.
type Option func(*config) error

// config is everything a supervisor needs; the caller never sees it.
type config struct {
	connect     []snodo.Option
	maxRestarts int
	window      time.Duration
	backoff     Backoff
	failFast    bool
	maxWait     time.Duration
	logger      *slog.Logger
	onEvent     func(LifecycleEvent)
	eventsTo    *protoactor.PID
	owner       *protoactor.PID
	parent      protoactor.Context // WithParent: spawn as its child
	system      *protoactor.ActorSystem
	name        string               // for logs and events; pools number their members
	server      string               // a pool member's pool's name; "" for a supervised client (its name)
	level       snodo.LoggingLevel   // a pool's SetLoggingLevel, for a member it adds
	meter       metric.MeterProvider // nil: the global one
	// onChange, set for a pool's members, wakes the pool's calls waiting
	// for a member to come up. Called under state.mu: it takes no lock
	// but its own.
	onChange func()
	// kill, once set, has the servers stopped for good (stdin closed,
	// then SIGTERM and SIGKILL to the process group of one that ignores
	// EOF) rather than closed as supervision ends: a pool whose start failed
	// sets it, and its members share it (they copy the pool's config).
	kill *atomic.Bool
}

// parentOf is WithParent's context as a spawner, nil without one (a
// typed nil would not be).
func parentOf(c *config) protoactor.SpawnerContext {
	if c.parent == nil {
		return nil
	}
	return c.parent
}

// endToOwner reports whether a pool or supervised client that stopped
// for reason tells its owner (Ended, then Reaped). Not when its parent,
// which is its owner, stopped it by stopping (ErrOwnerExited): a
// stopping actor gets its children's Terminated (system messages) before
// any user message, and stops after the last one, so an Ended would
// reach it before or after that child's Terminated or not at all, and a
// Reaped never. Its Terminated is what a stopping parent gets, always.
func endToOwner(c *config, reason error) bool {
	return c.owner != nil && !(c.parent != nil && errors.Is(reason, snodo.ErrOwnerExited))
}

// origin names the supervised client's server in messages to actors.
func (c *config) origin() snodo.Origin {
	return snodo.Origin{Server: cmp.Or(c.server, c.name), Member: c.name}
}

// config is what internal/supopts reads of a list of options.
var _ supopts.Config = (*config)(nil)

func newConfig(opts []Option) (*config, error) {
	cfg := &config{}
	cfg.Defaults()
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("supervisor: option %d is nil; leave it out of the list instead", i+1)
		}
		if err := opt(cfg); err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
	}
	if err := cfg.Finish(); err != nil {
		return nil, fmt.Errorf("supervisor: WithConnectOptions: %w", err)
	}
	return cfg, nil
}

// Defaults readies a zero config before the options are applied (also
// for internal/supopts, which reads options for servers and the snodo
// command).
func (c *config) Defaults() {
	c.maxRestarts, c.window, c.backoff, c.maxWait = defaultMaxRestarts, defaultWindow, defaultBackoff, defaultMaxWait
	c.kill = new(atomic.Bool)
}

// Finish completes a config the options were applied to: what the
// connections' options share with the supervisor, and the logger that
// discards when none was named.
func (c *config) Finish() error {
	if err := c.share(); err != nil {
		return err
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Setup is the actor system, owner and logger of a finished config (nil
// where none was named), for internal/supopts.
func (c *config) Setup() (*protoactor.ActorSystem, *protoactor.PID, *slog.Logger) {
	return c.system, c.owner, c.logger
}

// ConnectOptions are the options WithConnectOptions gave, in order, for
// internal/supopts.
func (c *config) ConnectOptions() []snodo.Option { return c.connect }

// share takes from the connections' options what the supervisor shares
// with them (WithConnectOptions): logger, meter provider, actor system,
// owner, and the server's name (snodo.WithOrigin's Server). Each is
// given once; what WithParent (or StartPool) also sets must agree.
func (c *config) share() error {
	set, err := connopts.SharedOf(c.connect)
	if err != nil {
		return err
	}
	c.logger, c.meter = set.Logger, set.Meter
	if set.System != nil {
		if c.parent != nil && set.System != c.parent.ActorSystem() {
			return errors.New("snodo.WithActorSystem names another system than WithParent's actor runs on; leave it out (the parent's system is used)")
		}
		c.system = set.System
	}
	if set.Owner != nil {
		if c.parent != nil && !set.Owner.Equal(c.parent.Self()) {
			return fmt.Errorf("snodo.WithOwner(%s) and WithParent both name the owner; leave snodo.WithOwner out (the parent owns it)", set.Owner.Id)
		}
		c.owner = set.Owner
	}
	if set.OriginMember != "" {
		return fmt.Errorf("snodo.WithOrigin: Member %q: the supervisor names the member (the server's name, or NAME#N for a pool's member N); give Server only", set.OriginMember)
	}
	if set.OriginServer != "" {
		c.name = set.OriginServer
	}
	return nil
}

// WithConnectOptions passes options to every snodo.Connect the supervisor
// makes (environment, timeouts, handlers…), after
// snodo.WithShutdownGrace(2 * time.Second), which they may override: a
// server still running 2 s after its stdin was closed as supervision
// ends (Close, the owner's end, giving up) is sent SIGTERM, and SIGKILL
// 2 s after, both to its process group (snodo.WithShutdownGrace(0)
// closes stdin only). They add to each other, and to those of a servers
// file (its env variables are WithEnv options, so a WithEnv here adds one
// variable or replaces that one only).
//
// Among them, those that configure more than one connection configure
// the supervisor (or pool) too, given once for every layer:
//   - snodo.WithLogger receives the supervisor's lifecycle too: exits
//     (Warn), restarts (Info), a gave-up (Error). Default: discarded.
//   - snodo.WithMeterProvider counts its restarts
//     (snodo.supervisor.restarts) and give-ups (snodo.supervisor.give_ups)
//     too. Default: the global provider.
//   - snodo.WithActorSystem runs the supervisor (or pool) actor on that
//     system too. Default: snodo's shared quiet system.
//   - snodo.WithOwner makes the actor the owner of the supervisor (or
//     pool) instead: it watches the actor and ends when it terminates,
//     in addition to the ctx given to Connect or NewPool, and closes its
//     connections, which it owns.
//   - snodo.WithOrigin's Server names the server in logs and in every
//     message sent to actors (their snodo.Origin: Member is the name too
//     for a supervised client, "name#N" for a pool's member N). Default:
//     the target's String (a command's name). Its Member is the
//     supervisor's to set: one given is an error.
func WithConnectOptions(opts ...snodo.Option) Option {
	return func(c *config) error {
		c.connect = append(c.connect, opts...)
		return nil
	}
}

// WithIntensity sets the restart intensity limit, as in OTP: when more
// than maxRestarts restarts would happen within window, the supervisor
// gives up and stops with an error wrapping ErrGaveUp. maxRestarts 0 never restarts.
// Default 5 in 30 s.
func WithIntensity(maxRestarts int, window time.Duration) Option {
	return func(c *config) error {
		if maxRestarts < 0 || window <= 0 {
			return fmt.Errorf("WithIntensity(%d, %s): need maxRestarts >= 0 and a positive window", maxRestarts, window)
		}
		c.maxRestarts, c.window = maxRestarts, window
		return nil
	}
}

// WithBackoff sets the delay before each restart. Default: 100 ms,
// doubling to at most 10 s, ±20 % jitter.
func WithBackoff(b Backoff) Option {
	return func(c *config) error {
		if err := b.validate(); err != nil {
			return fmt.Errorf("WithBackoff: %w", err)
		}
		c.backoff = b
		return nil
	}
}

// FailFast makes calls made while the server restarts fail at once with
// a -32000 *snodo.Error wrapping ErrRestarting and snodo.ErrConnectionClosed.
// Default: such calls wait for the new server, for at most their Timeout
// request option (or WithMaxWait) and while their ctx lasts, and the time
// waited counts against that Timeout.
func FailFast() Option {
	return func(c *config) error { c.failFast = true; return nil }
}

// WithMaxWait bounds the wait for a restart of calls that give no Timeout
// request option, and a pool's Shrink's wait for the calls of the members
// it takes out. Default 60 s.
func WithMaxWait(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithMaxWait: %s must be positive", d)
		}
		c.maxWait = d
		return nil
	}
}

// WithEventHandler calls fn with every LifecycleEvent, in order, on the
// supervisor actor: fn must return quickly (send to a buffered channel or
// an actor) and must not call the supervised client. A panic in fn stops
// supervision, as any panic of the supervisor actor does (Err wraps
// snodo.ErrActorPanicked).
func WithEventHandler(fn func(LifecycleEvent)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("WithEventHandler: nil function")
		}
		c.onEvent = fn
		return nil
	}
}

// WithEventsTo sends every LifecycleEvent to the actor pid, as an *LifecycleEvent message,
// in order. pid lives in the supervisor's actor system: Connect and
// NewPool refuse one that is not alive there.
func WithEventsTo(pid *protoactor.PID) Option {
	return func(c *config) error {
		if pid == nil {
			return errors.New("WithEventsTo: nil PID")
		}
		c.eventsTo = pid
		return nil
	}
}

// WithParent makes the actor whose Receive is running now, ctx, the
// parent of the pool (or supervised client): its actor is spawned as
// ctx's child, so it shows in ctx.Children() and stops with ctx, as
// protoactor-go's children do; ctx is also its owner and its system is
// ctx's (a snodo.WithOwner or WithActorSystem given in WithConnectOptions
// that names another is an error). Call Connect, NewPool or StartPool
// from that Receive: ctx is valid only there. A panic in snodo's actor
// still stops it (it owns processes and never restarts empty); the parent
// gets its *actor.Terminated, and the owner its *Ended. When the parent
// itself stops or restarts, it gets each child's *actor.Terminated and no
// *Ended nor *Reaped (see Ended). Do not Close it
// from the parent's Stopping: protoactor-go stops the children right
// after, and a Stop to a child that is already gone is a dead letter.
func WithParent(ctx protoactor.Context) Option {
	return func(c *config) error {
		if ctx == nil {
			return errors.New("WithParent: nil actor context")
		}
		c.parent, c.owner, c.system = ctx, ctx.Self(), ctx.ActorSystem()
		return nil
	}
}

// startedBy is StartPool's system and owner: set before the caller's
// options, which may name others (snodo.WithActorSystem, WithOwner).
func startedBy(sys *protoactor.ActorSystem, pid *protoactor.PID) Option {
	return func(c *config) error {
		switch {
		case sys == nil:
			return errors.New("StartPool: nil actor system")
		case pid == nil:
			return errors.New("StartPool: nil PID: give the actor that gets the *PoolReady")
		}
		c.system, c.owner = sys, pid
		return nil
	}
}
