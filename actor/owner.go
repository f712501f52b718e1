package actor

import (
	protoactor "github.com/asynkron/protoactor-go/actor"
)

// WatchOwner calls onExit (once, on an actor goroutine) when owner
// terminates — at once if it is already gone. It is the owner link for
// code that is not itself an actor: protoactor-go's root context cannot
// Watch, and its futures race, so a tiny watcher actor does the watching.
// stop ends the watch: the watcher's Stop is a system message queued
// ahead of any Terminated that comes later, so an owner that terminates
// after stop returns is not reported.
func WatchOwner(system *protoactor.ActorSystem, owner *protoactor.PID, onExit func()) (stop func()) {
	props := protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			ctx.Watch(owner)
		case *protoactor.Terminated:
			if msg.Who.Equal(owner) {
				onExit()
			}
		case *protoactor.Stopping:
			ctx.Unwatch(owner)
		}
	}, protoactor.WithGuardian(StopOnFailure))
	watcher := system.Root.SpawnPrefix(props, "snodo-owner-watch")
	return func() { system.Root.Stop(watcher) }
}
