package actor_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
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

// Exit stops an actor that takes exit signals, a connection among them,
// and the actor records the reason: the connection's Err wraps it.
func ExampleExit() {
	server, err := testutil.BuildServer() // any stdio MCP server
	if err != nil {
		log.Fatal(err)
	}
	c, err := snodo.Connect(context.Background(), server, nil)
	if err != nil {
		log.Fatal(err)
	}
	errRetired := errors.New("retired by the operator")
	snodoactor.Exit(snodoactor.Shared(), c.PID(), errRetired)
	<-c.Done() // every caller answered, stdin closed, the server reaped
	fmt.Println(errors.Is(c.Err(), errRetired))
	// Output: true
}
