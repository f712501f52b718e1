// Package supopts is how the packages above package supervisor (servers,
// the snodo command, tests) read a list of supervisor options, typed.
//
// supervisor.Option is a func(*config) error over the supervisor's
// unexported config, and package supervisor cannot be imported from
// here (it imports this package), so the functions below are generic
// over the option type O and the config's pointer type PC, inferred from
// O; PC implements Config with methods package supervisor declares on
// its config. The compiler checks each use: no hook, no type assertion.
package supopts

import (
	"fmt"
	"log/slog"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
)

// Config is what package supervisor's config does for this package.
type Config interface {
	// Defaults readies a zero config as supervisor.Connect and NewPool
	// do before they apply their options.
	Defaults()
	// Finish completes a config the options were applied to as
	// supervisor.Connect and NewPool do: what the connections' options
	// share with the supervisor (its logger, system, owner), the logger
	// that discards when none was named.
	Finish() error
	// Setup is the actor system (nil: none named), the owner actor (nil:
	// none named) and the logger (one that discards: none named) of a
	// finished config.
	Setup() (*protoactor.ActorSystem, *protoactor.PID, *slog.Logger)
	// ConnectOptions are the options supervisor.WithConnectOptions gave,
	// in order.
	ConnectOptions() []snodo.Option
}

// Setup is the actor system (nil: none named), the owner actor (nil: none
// named) and the logger (one that discards: none named) that opts (O is
// supervisor.Option) name; invalid options are an error. What code that
// builds on supervisors (servers.Router) needs of the options it passes
// on: the system their actors run on, to run its own there too, and the
// logger they log to, to log there too.
func Setup[O ~func(PC) error, PC interface {
	*C
	Config
}, C any](opts []O) (*protoactor.ActorSystem, *protoactor.PID, *slog.Logger, error) {
	var c C
	PC(&c).Defaults()
	if err := apply(PC(&c), opts); err != nil {
		return nil, nil, nil, err
	}
	if err := PC(&c).Finish(); err != nil {
		return nil, nil, nil, fmt.Errorf("supervisor: WithConnectOptions: %w", err)
	}
	sys, owner, logger := PC(&c).Setup()
	return sys, owner, logger, nil
}

// ConnectOptions are the snodo options that opts (O is
// supervisor.Option) give every connection (supervisor.WithConnectOptions),
// in order; an invalid option is an error. What the snodo command, which
// connects to a servers file's server without supervising it, reads of
// the server's configuration.
func ConnectOptions[O ~func(PC) error, PC interface {
	*C
	Config
}, C any](opts []O) ([]snodo.Option, error) {
	var c C
	if err := apply(PC(&c), opts); err != nil {
		return nil, err
	}
	return PC(&c).ConnectOptions(), nil
}

// apply applies opts to c in order, refusing a nil one.
func apply[O ~func(PC) error, PC any](c PC, opts []O) error {
	for i, opt := range opts {
		if opt == nil {
			return fmt.Errorf("supervisor: option %d is nil; leave it out of the list instead", i+1)
		}
		if err := opt(c); err != nil {
			return fmt.Errorf("supervisor: %w", err)
		}
	}
	return nil
}
