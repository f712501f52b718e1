package actor_test

import (
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
)

// WatchOwner links code that is not an actor to an actor's life.
func ExampleWatchOwner() {
	system := snodoactor.Shared()
	owner := system.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))

	gone := make(chan struct{})
	stop := snodoactor.WatchOwner(system, owner, func() { close(gone) })
	defer stop()

	system.Root.Stop(owner)
	<-gone
	fmt.Println("owner gone")
	// Output: owner gone
}
