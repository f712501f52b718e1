package servers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/servers"
	"github.com/snodo/snodo/test/testutil"
)

// exampleFile is a server file naming snodo's test server twice.
func exampleFile() *servers.File {
	bin, err := testutil.BuildServer()
	if err != nil {
		log.Fatal(err)
	}
	cmd, _ := json.Marshal(bin)
	f, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {
		"calc":  {"command": `+string(cmd)+`, "snodo": {"pool": 2}},
		"notes": {"command": `+string(cmd)+`, "args": ["-era", "legacy"]}
	}}`))
	if err != nil {
		log.Fatal(err)
	}
	return f
}

// An actor owns a router over the file's servers and calls them by name.
func ExampleStartRouter() {
	system := snodoactor.Shared()
	file := exampleFile() // servers.Load("mcp.json") for a file on disk
	out := make(chan string, 2)
	var router *servers.Router
	service := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			var err error
			router, err = servers.StartRouter(context.Background(), ctx.ActorSystem(), ctx.Self(), file)
			if err != nil {
				log.Fatal(err)
			}
		case *servers.RouterReady:
			if msg.Err != nil {
				log.Fatal(msg.Err) // names each server that could not start
			}
			ctx.Request(router.PID(), &servers.To{Server: "calc",
				Call: &snodo.ToolCall{Name: "add", Args: map[string]int{"a": 2, "b": 3}, Tag: "sum"}})
			ctx.Request(router.PID(), &servers.To{Server: "mail",
				Call: &snodo.Call{Method: "tools/list", Tag: "mail"}})
		case *snodo.ToolReply:
			out <- fmt.Sprintf("%v: %s", msg.Tag, msg.Result.StructuredContent)
		case *snodo.Reply:
			out <- fmt.Sprintf("%v: %v", msg.Tag, msg.Err)
		case *actor.Stopping:
			_ = router.Close()
		}
	}))
	got := []string{<-out, <-out}
	if got[0] < got[1] {
		got[0], got[1] = got[1], got[0]
	}
	fmt.Println(got[0])
	fmt.Println(got[1])
	system.Root.Stop(service)
	<-router.Done()
	// Output:
	// sum: {"sum":5}
	// mail: servers: no such server "mail" in mcp.json (it has ["calc" "notes"])
}
