package snodo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
)

// An actor connects from its Receive without blocking, and gets the client
// as a message.
func ExampleConnectTo() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	connected := make(chan *snodo.Client, 1)
	agent := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			snodo.ConnectTo(context.Background(), ctx.ActorSystem(), ctx.Self(), cmd, args)
		case *snodo.Connected:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			connected <- msg.Client
		}
	}))
	c := <-connected
	fmt.Println("connected:", c.Era())
	system.Root.Stop(agent) // the connection closes with its owner
	<-c.Done()
	// Output:
	// connected: modern
}
