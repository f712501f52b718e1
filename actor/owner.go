package actor

import (
	"sync"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/guardian"
)

// WatchOwner calls onExit (once, on an actor goroutine) when owner
// terminates — at once if it is already gone, or nil. It is the owner link for
// code that is not itself an actor: protoactor-go's root context cannot
// Watch, and its futures race, so a tiny watcher actor does the watching.
// stop ends the watch: the watcher's Stop is a system message queued
// ahead of any Terminated that comes later, so an owner that terminates
// after stop returns is not reported.
func WatchOwner(system *protoactor.ActorSystem, owner *protoactor.PID, onExit func()) (stop func()) {
	gone := false // the owner's Terminated came: nothing to unwatch
	props := protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			if owner == nil { // no owner: as one already gone
				gone = true
				onExit()
				return
			}
			ctx.Watch(owner)
		case *protoactor.Terminated:
			if msg.Who.Equal(owner) {
				gone = true
				onExit()
			}
		case *protoactor.Stopping:
			// An Unwatch to a gone owner is a dead letter: one that died
			// just now, its Terminated still queued behind this stop,
			// is no longer registered.
			if _, alive := system.ProcessRegistry.Get(owner); !gone && alive {
				ctx.Unwatch(owner)
			}
		}
	}, protoactor.WithGuardian(guardian.StopOnFailure))
	watcher := system.Root.SpawnPrefix(props, "snodo-owner-watch")
	var once sync.Once // a second Stop would be a dead letter
	return func() { once.Do(func() { system.Root.Stop(watcher) }) }
}
