package supervisor_test

import (
	"context"
	"fmt"
	"log"
	"syscall"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/supervisor"
)

// An actor starts a pool as its child without blocking its mailbox, and
// sends calls to the pool's PID (even before it is ready: they wait for
// its first member); the pool stops with the actor.
func ExampleStartPool() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	out := make(chan string, 4)
	var pool *supervisor.Pool
	service := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			var err error
			pool, err = supervisor.StartPool(context.Background(), ctx.ActorSystem(), ctx.Self(), snodo.Command(cmd, args...), 3,
				supervisor.WithParent(ctx))
			if err != nil {
				log.Fatal(err)
			}
			ctx.Request(pool.PID(), &snodo.ToolCall{Name: "add", Args: map[string]int{"a": 2, "b": 3}, Tag: "early"})
		case *supervisor.PoolReady:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			out <- fmt.Sprint("ready: ", len(msg.Pool.Members()), " members; children: ", len(ctx.Children()))
		case *snodo.ToolReply:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			out <- fmt.Sprintf("%v: %s", msg.Tag, msg.Result.StructuredContent)
		}
	}))
	got := []string{<-out, <-out}
	if got[0] > got[1] { // the reply and the readiness race
		got[0], got[1] = got[1], got[0]
	}
	fmt.Println(got[0])
	fmt.Println(got[1])
	system.Root.Stop(service) // the pool, its child, stops first
	<-pool.Done()             // every server reaped
	// Output:
	// early: {"sum":5}
	// ready: 3 members; children: 1
}

// A supervised subscription opened with a *snodo.ListenCall keeps
// delivering to its actor across a restart, with the resubscribed marker
// in between.
func ExampleClient_Listen() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	c, err := supervisor.Connect(context.Background(), snodo.Command(cmd, args...))
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		_ = c.Close()
		<-c.Done() // Close returns at once; Done waits for the servers
	}()
	out := make(chan string, 4)
	emit := &snodo.Call{Method: "test/emit", Params: map[string]string{"method": "notifications/tools/list_changed"}}
	listener := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			ctx.Request(c.PID(), &snodo.ListenCall{Filter: snodo.Filter{ToolsListChanged: true}})
		case *snodo.ListenReply:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			ctx.Request(c.PID(), emit)
		case *snodo.SubscriptionEvent:
			out <- msg.Method
			if msg.Method == supervisor.ResubscribedMethod {
				ctx.Request(c.PID(), emit) // the new server's events come next
			}
		}
	}))
	defer system.Root.Stop(listener)
	fmt.Println(<-out)
	_ = syscall.Kill(c.Current().ServerPID(), syscall.SIGKILL)
	fmt.Println(<-out)
	fmt.Println(<-out)
	// Output:
	// notifications/tools/list_changed
	// snodo/resubscribed
	// notifications/tools/list_changed
}
