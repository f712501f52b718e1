package remote_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// A host serves a pool under a name; a client on any machine that
// reaches the same NATS system calls it by that name. Here all three —
// the NATS server, the host and the caller — share one process.
func Example() {
	ctx := context.Background()
	nats, err := natsembed.Start(natsembed.Options{}) // or a NATS cluster's URL
	if err != nil {
		log.Fatal(err)
	}
	defer nats.Shutdown()

	server, err := testutil.BuildServer() // any MCP server command
	if err != nil {
		log.Fatal(err)
	}
	pool, err := supervisor.NewPool(ctx, snodo.Command(server), 2)
	if err != nil {
		log.Fatal(err)
	}
	host, err := remote.NewHost(ctx, nats.URL(), remote.Serve("search", pool)) // the host owns the pool now
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	c, err := remote.Dial(ctx, nats.URL(), "search",
		remote.WithConnectOptions(snodo.WithTimeout(30*time.Second))) // the snodo options that apply to a remote client
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hello from afar"})
	if err != nil {
		log.Fatal(err) // -32000 wrapping remote.ErrNoHost or remote.ErrHostGone, or the server's own error
	}
	fmt.Println(res.Text())
	// Output: hello from afar
}
