package actor

import (
	"log/slog"
	"sync"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

var (
	sharedOnce   sync.Once
	sharedSystem *protoactor.ActorSystem
)

// Shared returns the process-wide actor system snodo uses when the caller
// does not give one. It is created on first use with logging discarded
// (protoactor-go's default logger prints colored INFO lines to stderr).
func Shared() *protoactor.ActorSystem {
	sharedOnce.Do(func() { sharedSystem = NewQuietSystem(nil) })
	return sharedSystem
}

// NewQuietSystem creates an actor system that logs to logger, or nowhere
// when logger is nil.
func NewQuietSystem(logger *slog.Logger) *protoactor.ActorSystem {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return protoactor.NewActorSystem(protoactor.WithLoggerFactory(
		func(*protoactor.ActorSystem) *slog.Logger { return logger },
	))
}

// stopOnFailure is a supervisor strategy that stops a failing actor
// instead of restarting it. protoactor-go's default restarts with a fresh
// instance, which would silently drop an actor's tables while the
// resources it owns (a child process) live on.
var stopOnFailure protoactor.SupervisorStrategy = protoactor.NewOneForOneStrategy(
	0, 0, func(any) protoactor.Directive { return protoactor.StopDirective },
)
