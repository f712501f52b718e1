package engine_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/test/testutil"
)

// testServer is the command of an MCP server for the examples: here the
// project's test server; in a program, any stdio MCP server.
func testServer() string {
	path, err := testutil.BuildServer()
	if err != nil {
		log.Fatalf("building the test server: %v", err)
	}
	return path
}

// A Conn is the transport alone: it starts the server, writes requests
// and routes answers, and knows nothing of MCP's eras or handshakes (the
// root package's Connect does those on top of it).
func ExampleStart() {
	ctx := context.Background()
	c, err := engine.Start(ctx, engine.Config{
		Command: testServer(),
		Timeout: 10 * time.Second, // per request, unless CallOptions say otherwise
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	raw, err := c.Request(ctx, "test/echo", map[string]any{"text": "hello"}, nil)
	if err != nil {
		log.Fatal(err) // a *jsonrpc.Error from the server, or a local one
	}
	fmt.Println(string(raw))
	// Output: {"text":"hello"}
}

// OnProgress gives the request a progress token and runs, on the caller's
// goroutine and in order, for each notifications/progress the server sends
// for it, before Request returns.
func ExampleCallOptions_progress() {
	ctx := context.Background()
	c, err := engine.Start(ctx, engine.Config{Command: testServer()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	raw, err := c.Request(ctx, "test/progress", map[string]any{"count": 2, "message": "step"}, &engine.CallOptions{
		OnProgress: func(p engine.Progress) {
			fmt.Printf("%s %.0f/%.0f\n", p.Message, p.Progress, p.Total)
		},
		ResetTimeoutOnProgress: true,
		MaxTotalTimeout:        time.Minute,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(raw))
	// Output:
	// step 1/2
	// step 2/2
	// {"done":2}
}

// Trace sees every line on the wire, here only the ones the client sends.
func ExampleConfig_trace() {
	ctx := context.Background()
	c, err := engine.Start(ctx, engine.Config{
		Command: testServer(),
		Trace: func(dir connection.Direction, line []byte) {
			if dir == connection.Sent {
				fmt.Printf("sent %s\n", line) // valid only during the call: copy it to keep it
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Request(ctx, "ping", nil, nil); err != nil {
		log.Fatal(err)
	}
	// Output:
	// sent {"jsonrpc":"2.0","method":"notifications/initialized"}
	// sent {"jsonrpc":"2.0","id":1,"method":"ping"}
}
