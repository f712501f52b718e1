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

// A host that also serves the name's legacy-era connection: the first
// caller of the legacy era starts it, and the requests its server sends
// during a call (here an elicitation) are answered by that caller's own
// handler.
func ExampleServeLegacy() {
	ctx := context.Background()
	nats, err := natsembed.Start(natsembed.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer nats.Shutdown()
	server, err := testutil.BuildServer() // speaks both eras
	if err != nil {
		log.Fatal(err)
	}
	target := snodo.Command(server)
	pool, err := supervisor.NewPool(ctx, target, 1) // the modern era
	if err != nil {
		log.Fatal(err)
	}
	legacy := func(ctx context.Context, opts ...snodo.Option) (*supervisor.Pool, error) {
		return supervisor.NewPool(ctx, target, 1, supervisor.WithConnectOptions(opts...)) // opts last
	}
	host, err := remote.NewHost(ctx, nats.URL(), remote.Serve("greeter", pool), remote.ServeLegacy("greeter", legacy))
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	answer := func(_ context.Context, req *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	c, err := remote.Dial(ctx, nats.URL(), "greeter", remote.WithConnectOptions(
		snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(answer)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "ask", nil) // the server asks for a name mid-call
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	// Output: Hello, Ada!
}
