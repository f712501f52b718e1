package substream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/substream"
	"github.com/snodo/snodo/subscription"
	"github.com/snodo/snodo/test/testutil"
)

// Open runs a subscription on the engine alone; with the root package,
// Client.Listen does the same with the era's _meta filled in.
func ExampleOpen() {
	ctx := context.Background()
	server, err := testutil.BuildServer() // any stdio MCP server of the 2026-07-28 era
	if err != nil {
		log.Fatal(err)
	}
	c, err := engine.Start(ctx, engine.Config{Command: server})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The modern era wants its _meta on every request.
	meta := []byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"example","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`)
	params, err := json.Marshal(map[string]any{"notifications": subscription.Filter{ToolsListChanged: true}})
	if err != nil {
		log.Fatal(err)
	}
	// ctx owns the subscription: when it is done, the subscription ends and
	// is cancelled on the server.
	s, err := substream.Open(ctx, c, params, meta, substream.Options{MaxQueue: 64})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	fmt.Printf("acknowledged tools: %v\n", s.Acknowledged().ToolsListChanged)

	// Make the test server announce a change to its tools.
	if _, err := c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"}, nil); err != nil {
		log.Fatal(err)
	}
	ev := <-s.Events()
	fmt.Println(ev.Method)

	s.Close()
	<-s.Done()
	fmt.Println(s.Err())
	// Output:
	// acknowledged tools: true
	// notifications/tools/list_changed
	// snodo: subscription closed by the client
}
