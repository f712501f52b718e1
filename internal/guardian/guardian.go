// Package guardian holds the one supervisor strategy every actor snodo
// spawns to own something runs under (package actor's owner watchers,
// internal/life's owned actors). protoactor-go makes one guardian actor
// per strategy value, so there must be exactly one value. (leaf)
package guardian

import protoactor "github.com/asynkron/protoactor-go/actor"

// StopOnFailure stops a failing actor instead of restarting it.
// protoactor-go's default restarts with a fresh instance, which would
// silently drop an actor's tables while the resources it owns (a child
// process) live on.
var StopOnFailure protoactor.SupervisorStrategy = protoactor.NewOneForOneStrategy(
	0, 0, func(any) protoactor.Directive { return protoactor.StopDirective },
)
