// Package connopts is how the packages above snodo's root (supervisor,
// servers, remote, the snodo command, tests) read and extend a list of
// snodo's connect options (snodo.Option), and reach, typed, what only the
// root can do for them: what the options give the layers above a
// connection (Shared), what a remote client takes of them
// (RemoteSettings), options only the module makes (Unowned, Lend,
// ProcessGrace), the instrumented requester of a remote client
// (Instrument), and the call-message handling of the supervisor's and
// pool's actors (CallHandler, AnswerDeadCalls).
//
// snodo.Option is a func(*config) error over the root's unexported
// config, and the root cannot be imported from here, so the functions
// below are generic over the option type O and the config's pointer type
// PC, which they infer from O; PC implements the interfaces below
// (Config, RemoteConfig, Instrumenter, CallServer, DeadCalls) with
// methods the root declares on its config, and asserts so at compile
// time. The compiler checks each use: no hook, no type assertion, no
// state of this package.
package connopts

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/handlers"
)

// Shared is what a list of snodo options says that the layers above a
// connection (a supervisor, a pool) share with it, so that each is given
// once, and what the snodo command reads back of a servers file's
// configuration for its own waits: nil or zero for what the options do
// not give.
type Shared struct {
	Logger        *slog.Logger            // snodo.WithLogger
	Meter         metric.MeterProvider    // snodo.WithMeterProvider
	System        *protoactor.ActorSystem // snodo.WithActorSystem
	Owner         *protoactor.PID         // snodo.WithOwner
	OriginServer  string                  // snodo.WithOrigin's Server
	OriginMember  string                  // and Member
	Timeout       time.Duration           // snodo.WithTimeout (negative: none)
	ShutdownGrace time.Duration           // snodo.WithShutdownGrace
	Era           bool                    // snodo.WithEra was given: no era detection
}

// RemoteSettings are what snodo options set on a client that reaches its
// server through hosts over NATS (package remote); K is
// snodo.ClientCapabilities. Each is its zero value where no option gave
// it.
type RemoteSettings[K any] struct {
	Timeout        time.Duration        // WithTimeout (negative: none)
	Handler        handlers.Func        // WithServerRequestHandler
	MaxInputRounds int                  // WithMaxInputRounds
	Capabilities   *K                   // WithClientCapabilities; nil: not given
	Tracers        trace.TracerProvider // WithTracerProvider
	Meters         metric.MeterProvider // WithMeterProvider
	System         *protoactor.ActorSystem
	Logger         *slog.Logger
	// Era is WithEra's ("legacy" or "modern"; "" when not given): a
	// legacy remote client is served on its hosts' legacy-era pools.
	Era string
	// Notify is WithNotificationHandler's: the log messages of a legacy
	// remote client's calls.
	Notify func(ctx context.Context, method string, params json.RawMessage)
}

// Lent is what a connection lends the code that connected it with a Lend
// option, filled in once the connect succeeded.
type Lent struct {
	// Kill closes the client and stops its server for good: if it has
	// not exited 500 ms after its stdin was closed, SIGTERM to its
	// process group, SIGKILL 500 ms later; it returns once the server is
	// reaped. For a server the caller gives up on (a replaced one, the
	// members of a pool that could not start).
	Kill func()

	// Flush waits until every notification queued for the client's
	// WithNotificationHandler handler has been delivered and the handler
	// has returned, or ctx is done. After the client's Done is closed no
	// more arrive, so it waits for all the server sent: the snodo
	// command flushes before it exits, to print them all.
	Flush func(ctx context.Context) error

	// Done is closed once the client is closed (its connection over):
	// what LendEach's f was given may then be let go.
	Done <-chan struct{}
}

// Config is what the root's config does for this package.
type Config interface {
	// Shared is what the options applied so far give the layers above.
	Shared() Shared
	// Unown takes back the owner actor an earlier WithOwner gave.
	Unown()
	// Lend has a successful connect fill in l.
	Lend(l *Lent)
	// LendEach has every successful connect call f with what it lends.
	LendEach(f func(Lent))
	// ProcessGrace sets the shutdown grace of a server snodo starts as a
	// command, as WithShutdownGrace does, yet is no process-only option:
	// a connection of another transport ignores it.
	ProcessGrace(d time.Duration)
}

// RemoteConfig is what the root's config does for RemoteOf (K is
// snodo.ClientCapabilities).
type RemoteConfig[K any] interface {
	// StartRemote readies a zero config to read one option for a
	// remote client.
	StartRemote()
	// TakeRemote moves into s what the one option applied set that a
	// remote client has; rest is the name of what else it set ("" when
	// it has no name) and other whether it set anything else.
	TakeRemote(s *RemoteSettings[K]) (rest string, other bool)
}

// SharedOf applies opts (O is snodo.Option) in order to a zero config and
// returns what they give the layers above a connection; a nil or invalid
// option is an error.
func SharedOf[O ~func(PC) error, PC interface {
	*C
	Config
}, C any](opts []O) (Shared, error) {
	var c C
	for i, opt := range opts {
		if opt == nil {
			return Shared{}, fmt.Errorf("option %d is nil; leave it out of the list instead", i+1)
		}
		if err := opt(&c); err != nil {
			return Shared{}, err
		}
	}
	return PC(&c).Shared(), nil
}

// Unowned is an option (O is snodo.Option) that takes back the owner
// actor an earlier snodo.WithOwner gave: a supervisor's connections are
// owned by the supervisor, never by its owner, so that no watch outlives
// one of them (each would be a dead letter).
func Unowned[O ~func(PC) error, PC interface {
	*C
	Config
}, C any]() O {
	return O(func(c PC) error { c.Unown(); return nil })
}

// Lend is an option (O is snodo.Option) that has a successful connect
// fill in l.
func Lend[O ~func(PC) error, PC interface {
	*C
	Config
}, C any](l *Lent) O {
	return O(func(c PC) error { c.Lend(l); return nil })
}

// LendEach is an option (O is snodo.Option) that calls f, once each
// connect made with it succeeded, with what that connection lends: one
// option given to every connection of a pool (supervisor.WithConnectOptions),
// whose connections come and go. f runs on the connecting goroutine and
// must not block.
func LendEach[O ~func(PC) error, PC interface {
	*C
	Config
}, C any](f func(Lent)) O {
	return O(func(c PC) error { c.LendEach(f); return nil })
}

// ProcessGrace is an option (O is snodo.Option) that sets the shutdown
// grace of a server started as a command (snodo.WithShutdownGrace) and
// is ignored by a connection of any other transport: a supervisor gives
// it to every connection it makes, before the caller's options.
func ProcessGrace[O ~func(PC) error, PC interface {
	*C
	Config
}, C any](d time.Duration) O {
	return O(func(c PC) error { c.ProcessGrace(d); return nil })
}

// RemoteOf reads opts (O is snodo.Option, K snodo.ClientCapabilities)
// for a client that reaches its server through hosts over NATS: each
// option is applied alone, what such a client has is taken, and an option
// that sets anything else is refused, naming it, so that none is
// silently ignored.
func RemoteOf[K any, O ~func(PC) error, PC interface {
	*C
	RemoteConfig[K]
}, C any](opts []O) (RemoteSettings[K], error) {
	var s RemoteSettings[K]
	for i, opt := range opts {
		if opt == nil {
			return s, fmt.Errorf("option %d is nil; leave it out of the list instead", i+1)
		}
		var c C
		PC(&c).StartRemote()
		if err := opt(&c); err != nil {
			return s, err
		}
		if name, other := PC(&c).TakeRemote(&s); other {
			if name != "" {
				name = " (" + name + ")"
			}
			return s, fmt.Errorf("option %d%s does not apply to a remote client: its server is started and reached by the hosts, which take such options in their pools' own; a remote client takes WithTimeout, WithServerRequestHandler, WithMaxInputRounds, WithClientCapabilities, WithTracerProvider, WithMeterProvider, WithActorSystem, WithLogger, WithEra and WithNotificationHandler", i+1, name)
		}
	}
	return s, nil
}
