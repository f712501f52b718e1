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
	"github.com/snodo/snodo/internal/seam"
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
	// kill, once set, has the servers stopped for good (snodo.Client.Kill)
	// rather than closed as supervision ends: a pool whose start failed
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

// origin names the supervised client's server in messages to actors.
func (c *config) origin() snodo.Origin {
	return snodo.Origin{Server: cmp.Or(c.server, c.name), Member: c.name}
}

func newConfig(opts []Option) (*config, error) {
	cfg := &config{
		maxRestarts: defaultMaxRestarts,
		window:      defaultWindow,
		backoff:     defaultBackoff,
		maxWait:     defaultMaxWait,
		kill:        new(atomic.Bool),
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("supervisor: option %d is nil; leave it out of the list instead", i+1)
		}
		if err := opt(cfg); err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
	}
	// A provider or logger given once reaches the connections too; their
	// own (WithConnectOptions) come after, so they win.
	var base []snodo.Option
	if cfg.meter != nil {
		base = append(base, snodo.WithMeterProvider(cfg.meter))
	}
	if cfg.logger != nil {
		base = append(base, snodo.WithLogger(cfg.logger))
	}
	cfg.connect = append(base, cfg.connect...)
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

// WithMeterProvider counts the supervisor's restarts
// (snodo.supervisor.restarts) and give-ups (snodo.supervisor.give_ups)
// with mp, and the connections' metrics too (as snodo.WithMeterProvider;
// one given in WithConnectOptions wins for those). Default: the global
// provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return errors.New("WithMeterProvider: nil provider")
		}
		c.meter = mp
		return nil
	}
}

// WithConnectOptions passes options to every snodo.Connect the supervisor
// makes (environment, timeouts, handlers…), after
// snodo.WithShutdownGrace(2 * time.Second), which they may override: a
// server still running 2 s after its stdin was closed as supervision
// ends (Close, the owner's end, giving up) is sent SIGTERM, and SIGKILL
// 2 s after, both to its process group (snodo.WithShutdownGrace(0)
// closes stdin only).
// They add to each other, and to those of a servers file (its env
// variables are WithEnv options, so a WithEnv here adds one variable or
// replaces that one only). WithOwner and WithActorSystem among them are
// overridden: the supervisor owns its connections.
func WithConnectOptions(opts ...snodo.Option) Option {
	return func(c *config) error {
		c.connect = append(c.connect, opts...)
		return nil
	}
}

// WithIntensity sets the restart intensity limit, as in OTP: when more
// than maxRestarts restarts would happen within window, the supervisor
// gives up and stops with a *GaveUpError. maxRestarts 0 never restarts.
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

// WithLogger receives the supervisor's lifecycle: exits (Warn), restarts
// (Info), a gave-up (Error), and its connections' records (as
// snodo.WithLogger; one given in WithConnectOptions wins for those).
// Default: discarded, like snodo.WithLogger.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithEventHandler calls fn with every LifecycleEvent, in order, on the
// supervisor actor: fn must return quickly (send to a buffered channel or
// an actor) and must not call the supervised client. A panic in fn stops
// supervision, as any panic of the supervisor actor does (Err wraps
// actor.ErrPanicked).
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

// WithOwner makes an actor the owner, as snodo.WithOwner does for a plain
// connection: the supervisor (or pool) watches it and closes when it
// terminates, in addition to the ctx given to Connect or NewPool.
func WithOwner(pid *protoactor.PID) Option {
	return func(c *config) error {
		if pid == nil {
			return errors.New("WithOwner: nil PID")
		}
		c.owner = pid
		return nil
	}
}

// WithParent makes the actor whose Receive is running now, ctx, the
// parent of the pool (or supervised client): its actor is spawned as
// ctx's child, so it shows in ctx.Children() and stops with ctx, as
// protoactor-go's children do; ctx is also its owner (WithOwner) and its
// system is ctx's (WithActorSystem). Call Connect, NewPool or StartPool
// from that Receive: ctx is valid only there. A panic in snodo's actor
// still stops it (it owns processes and never restarts empty); the parent
// gets its *actor.Terminated, and the owner its *Ended. Do not Close it
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

// WithActorSystem runs the supervisor and its connections on sys.
// Default: snodo's shared quiet system.
func WithActorSystem(sys *protoactor.ActorSystem) Option {
	return func(c *config) error {
		if sys == nil {
			return errors.New("WithActorSystem: nil system")
		}
		c.system = sys
		return nil
	}
}

func init() {
	// What code that builds on supervisors (servers.Router) needs of the
	// options it passes on: the system their actors run on, to run its
	// own there too, and the logger they log to, to log there too.
	seam.SupervisorSetup = func(opts any) (*protoactor.ActorSystem, *slog.Logger, error) {
		cfg, err := newConfig(opts.([]Option))
		if err != nil {
			return nil, nil, err
		}
		return cfg.system, cfg.logger, nil
	}
}

// WithName names the server in logs and in every message sent to actors
// (their snodo.Origin: Server is the name; Member is the name too for a
// supervised client, "name#N" for a pool's member N). Default: the
// target's String (a command's name).
func WithName(name string) Option {
	return func(c *config) error { c.name = name; return nil }
}
