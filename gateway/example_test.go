package gateway_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/supervisor"
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

// A supervised stdio server served over Streamable HTTP: the gateway's
// ConnectOptions go to the supervisor, so that the server's requests and
// logs reach the gateway's clients; any MCP client then calls it at /mcp.
func Example() {
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
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux) // in a program: gateway.NewServer(addr, mux).ListenAndServe()
	defer srv.Close()

	c, err := snodo.ConnectHTTP(ctx, srv.URL+"/mcp")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "through the gateway"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Era(), res.Content[0].Text)
	// Output: modern through the gateway
}

// A ListCache answers a session's list calls from memory until the
// server says the list changed.
func ExampleNewListCache() {
	ctx := context.Background()
	c, err := snodo.Connect(ctx, testServer(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	cache := gateway.NewListCache(ctx, c)
	defer cache.Close()
	first, err := cache.List(ctx, "tools/list", "")
	if err != nil {
		log.Fatal(err)
	}
	again, _ := cache.List(ctx, "tools/list", "")
	fmt.Println(string(first) == string(again))
	// Output: true
}

// Only requests bearing a JWT from the issuer, for the audience, reach
// the gateway; the others get 401 naming the protected resource
// metadata, which the wrapper serves.
func ExampleRequireBearer() {
	h, err := gateway.New()
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	protected, err := gateway.RequireBearer("https://login.example.com", "https://mcp.example.com/mcp", mux)
	if err != nil {
		log.Fatal(err)
	}
	srv := gateway.NewServer("127.0.0.1:8080", protected)
	_ = srv // srv.ListenAndServe() serves it
}

// A server that speaks both eras, served to each client in its own: the
// legacy-era twin is connected when the first legacy client initializes,
// and the server's mid-call requests then reach that client's handler.
func ExampleHandler_AttachLegacy() {
	ctx := context.Background()
	h, err := gateway.New()
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	target := snodo.Command(testServer())
	sc, err := supervisor.Connect(ctx, target, supervisor.WithConnectOptions(h.ConnectOptions()...))
	if err != nil {
		log.Fatal(err)
	}
	defer sc.Close()
	if err := h.Attach(sc); err != nil {
		log.Fatal(err)
	}
	twin := make(chan *supervisor.Client, 1)
	defer func() {
		select {
		case t := <-twin:
			_ = t.Close()
		default:
		}
	}()
	err = h.AttachLegacy(func(ctx context.Context) (snodo.Session, error) { // runs with the first legacy client
		t, err := supervisor.Connect(ctx, target,
			supervisor.WithConnectOptions(append(h.ConnectOptions(), snodo.WithEra(snodo.EraLegacy))...))
		if err == nil {
			twin <- t
		}
		return t, err
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	answer := func(context.Context, *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	c, err := snodo.ConnectHTTP(ctx, srv.URL, snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(answer))
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
