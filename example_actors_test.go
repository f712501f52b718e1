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
	"github.com/snodo/snodo/test/testutil"
)

// The examples below are the code of docs/actors.md; TestDocsActorsSnippets
// checks that every snippet there is taken from one of them.

// An actor sends calls to a connection's PID and gets the replies as
// messages: it starts no goroutine and never blocks its mailbox.
func ExampleCall() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	out := make(chan string, 8)
	var mcp *snodo.Client
	system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			snodo.ConnectTo(context.Background(), ctx.ActorSystem(), ctx.Self(), cmd, args)
		case *snodo.Connected:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			mcp = msg.Client
			ctx.Request(mcp.PID(), &snodo.Call{
				Method: "test/progress", Params: map[string]int{"count": 2},
				Tag: "slow", Progress: true,
			})
		case *snodo.Progress:
			out <- fmt.Sprintf("%v: progress %v", msg.Tag, msg.Progress)
		case *snodo.Reply:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			out <- fmt.Sprintf("%v: done", msg.Tag)
			ctx.Request(mcp.PID(), &snodo.ToolCall{Name: "echo", Args: map[string]string{"message": "hi"}, Tag: 2})
		case *snodo.ToolReply:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			out <- fmt.Sprintf("%v: %s", msg.Tag, msg.Result.Text())
			ctx.Stop(ctx.Self()) // the connection closes with its owner
		}
	}))
	for range 4 {
		fmt.Println(<-out)
	}
	// Output:
	// slow: progress 1
	// slow: progress 2
	// slow: done
	// 2: hi
}

// The owner actor learns why its connection ended from a *snodo.Closed
// message.
func ExampleClosed() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	out := make(chan string, 1)
	system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			snodo.ConnectTo(context.Background(), ctx.ActorSystem(), ctx.Self(), cmd, args)
		case *snodo.Connected:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			// Ask the test server to crash.
			ctx.Request(msg.Client.PID(), &snodo.Call{Method: "test/crash", Params: map[string]int{"code": 3}})
		case *snodo.Closed:
			out <- fmt.Sprint("closed; server exited: ", errors.Is(msg.Err, snodo.ErrServerExited))
			ctx.Stop(ctx.Self())
		}
	}))
	fmt.Println(<-out)
	// Output:
	// closed; server exited: true
}

// An actor answers the server's requests for input (here elicitation,
// asked by the test server's "ask" tool) as *handlers.RequestMessage.
func ExampleToolCall() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	out := make(chan string, 1)
	system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			snodo.ConnectTo(context.Background(), ctx.ActorSystem(), ctx.Self(), cmd, args,
				snodo.WithServerRequestHandler(handlers.ToActor(ctx.ActorSystem(), ctx.Self())),
				snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{}}))
		case *snodo.Connected:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			ctx.Request(msg.Client.PID(), &snodo.ToolCall{Name: "ask", Tag: "greeting"})
		case *handlers.RequestMessage:
			switch msg.Request.Method {
			case "elicitation/create":
				p, err := msg.Request.Elicitation()
				if err != nil {
					msg.Reply(nil, err)
					return
				}
				if _, ok := p.RequestedSchema.Properties["name"]; ok {
					msg.Reply(&handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil)
					return
				}
				msg.Reply(&handlers.ElicitResult{Action: "decline"}, nil)
			default:
				msg.Reply(nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: msg.Request.Method})
			}
		case *snodo.ToolReply:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			out <- msg.Result.Text()
			ctx.Stop(ctx.Self())
		}
	}))
	fmt.Println(<-out)
	// Output:
	// Hello, Ada!
}

// Notifications no request or subscription claims (here a log message)
// arrive as *snodo.Notification with NotificationsTo.
func ExampleNotificationsTo() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	out := make(chan string, 1)
	system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			snodo.ConnectTo(context.Background(), ctx.ActorSystem(), ctx.Self(), cmd, args,
				snodo.WithNotificationHandler(snodo.NotificationsTo(ctx.ActorSystem(), ctx.Self())))
		case *snodo.Connected:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			// Ask the test server to send a log message.
			ctx.Request(msg.Client.PID(), &snodo.Call{Method: "test/notify", Params: map[string]any{
				"method": "notifications/message", "params": map[string]string{"level": "info", "data": "indexing done"}}})
		case *snodo.Notification:
			var m snodo.LogMessage
			if msg.Method == "notifications/message" && json.Unmarshal(msg.Params, &m) == nil {
				var text string
				_ = json.Unmarshal(m.Data, &text) // the data is a JSON string here
				out <- fmt.Sprint(m.Level, ": ", text)
				ctx.Stop(ctx.Self())
			}
		}
	}))
	fmt.Println(<-out)
	// Output:
	// info: indexing done
}

// A *snodo.ListenCall opens a subscription as a message: one
// *snodo.ListenReply, then the events, then one *snodo.SubscriptionEnded.
func ExampleListenCall() {
	system := snodoactor.Shared()
	cmd, args := exampleServer()
	out := make(chan string, 4)
	var mcp *snodo.Client
	var sub *snodo.Subscription
	system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			snodo.ConnectTo(context.Background(), ctx.ActorSystem(), ctx.Self(), cmd, args)
		case *snodo.Connected:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			mcp = msg.Client
			ctx.Request(mcp.PID(), &snodo.ListenCall{Filter: snodo.Filter{ToolsListChanged: true}, Tag: "tools"})
		case *snodo.ListenReply:
			if msg.Err != nil {
				log.Fatal(msg.Err)
			}
			sub = msg.Subscription
			out <- fmt.Sprintf("%v: listening", msg.Tag)
			// Make the test server announce a change to its tools.
			ctx.Request(mcp.PID(), &snodo.Call{Method: "test/emit",
				Params: map[string]string{"method": "notifications/tools/list_changed"}})
		case *snodo.SubscriptionEvent:
			out <- msg.Method
			_ = sub.Close()
		case *snodo.SubscriptionEnded:
			out <- fmt.Sprint("ended: ", errors.Is(msg.Err, snodo.ErrSubscriptionClosed))
			ctx.Stop(ctx.Self())
		}
	}))
	fmt.Println(<-out)
	fmt.Println(<-out)
	fmt.Println(<-out)
	// Output:
	// tools: listening
	// notifications/tools/list_changed
	// ended: true
}

// Exit stops a connection (or a supervised client, a pool, a router)
// with a reason, like an exit signal: its Err wraps the reason.
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
	snodo.Exit(snodoactor.Shared(), c.PID(), errRetired)
	<-c.Done() // every caller answered, stdin closed, the server reaped
	fmt.Println(errors.Is(c.Err(), errRetired))
	// Output: true
}
