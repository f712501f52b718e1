package gateway_test

import (
	"context"
	"fmt"
	"log"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/supervisor"
)

// A supervised server served to one client over stdio framing, as a
// stdio MCP server of its own would be (snodo bridge does this for a
// name served over NATS): in a program, h.ServeStdio(ctx, os.Stdin,
// os.Stdout). Here the client is snodo's own, in the same process.
func ExampleHandler_ServeStdio() {
	ctx := context.Background()
	h, err := gateway.New()
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	sc, err := supervisor.Connect(ctx, snodo.Command(testServer()), supervisor.WithConnectOptions(h.ConnectOptions()...))
	if err != nil {
		log.Fatal(err)
	}
	defer sc.Close()
	if err := h.Attach(sc); err != nil {
		log.Fatal(err)
	}

	c, err := snodo.ConnectTransport(ctx, connection.InMemory(h.ServeStdio), snodo.WithEra(snodo.EraLegacy))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "over stdio"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Era(), c.ServerInfo().Name, res.Content[0].Text)
	// Output: legacy snodo-testserver over stdio
}
