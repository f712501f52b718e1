package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/handlers"
)

func ExampleConnect() {
	cmd, args := exampleServer() // any stdio MCP server: "npx", []string{"-y", "…"}
	c, err := snodo.Connect(context.Background(), cmd, args,
		snodo.WithEnv("API_KEY", "secret"),
		snodo.WithClientInfo("my-agent", "1.4.0"),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	raw, err := c.Request(context.Background(), "test/env", map[string]string{"name": "API_KEY"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Era(), string(raw))
	// Output:
	// modern {"set":true,"value":"secret"}
}

func ExampleOnProgress() {
	cmd, args := exampleServer()
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	raw, err := c.Request(context.Background(), "test/progress", map[string]any{"count": 3, "message": "working"},
		snodo.OnProgress(func(p snodo.Progress) { // runs on this goroutine, before Request returns
			fmt.Printf("%s %.0f/%.0f\n", p.Message, p.Progress, p.Total)
		}),
		snodo.ResetTimeoutOnProgress(),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(raw))
	// Output:
	// working 1/3
	// working 2/3
	// working 3/3
	// {"done":3}
}

func ExampleClient_Listen() {
	cmd, args := exampleServer()
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Listen(context.Background(), snodo.Filter{ToolsListChanged: true, PromptsListChanged: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	fmt.Printf("acknowledged: %+v\n", sub.Acknowledged()) // this server does not do prompts

	// Make the test server announce a change to its tools.
	if _, err := c.Request(context.Background(), "test/emit", map[string]string{"method": "notifications/tools/list_changed"}); err != nil {
		log.Fatal(err)
	}
	ev := <-sub.Events()
	fmt.Println(ev.Method)
	// Output:
	// acknowledged: {ToolsListChanged:true PromptsListChanged:false ResourcesListChanged:false ResourceSubscriptions:[]}
	// notifications/tools/list_changed
}

// A legacy server asks the client for its roots; the handler answers.
func ExampleServerRequestHandler() {
	roots := func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
		if req.Method != "roots/list" {
			return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: "not supported: " + req.Method}
		}
		return &handlers.ListRootsResult{Roots: []handlers.Root{{URI: "file:///srv/project", Name: "project"}}}, nil
	}
	cmd, args := exampleServer("-era", "legacy") // legacy servers send requests to the client
	c, err := snodo.Connect(context.Background(), cmd, args, snodo.WithServerRequestHandler(roots))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Ask the test server to send roots/list and report what we answered.
	raw, err := c.Request(context.Background(), "test/serverRequest", map[string]string{"method": "roots/list"})
	if err != nil {
		log.Fatal(err)
	}
	var out struct {
		Responses []struct{ Result json.RawMessage }
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out.Responses[0].Result))
	// Output:
	// {"roots":[{"uri":"file:///srv/project","name":"project"}]}
}

func ExampleWithOwner() {
	system := snodoactor.Shared()
	// An actor that owns a connection: when it stops, the connection closes.
	owner := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {}))

	cmd, args := exampleServer()
	c, err := snodo.Connect(context.Background(), cmd, args, snodo.WithOwner(owner), snodo.WithActorSystem(system))
	if err != nil {
		log.Fatal(err)
	}
	system.Root.Stop(owner)
	<-c.Done() // the owner terminated: the server got EOF, exited and was reaped
	fmt.Println(errors.Is(c.Err(), snodo.ErrOwnerExited))
	_, err = c.Request(context.Background(), "test/echo", nil)
	fmt.Println(errors.Is(err, snodo.ErrConnectionClosed))
	// Output:
	// true
	// true
}
