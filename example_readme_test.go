package snodo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
)

// The examples of README.md, which TestDocsREADMESnippets keeps equal to
// them line for line. They need npx, the network or a server at a URL,
// so they are compiled but not run; Example, ExampleConnectHTTP and
// supervisor's ExampleNewPool run the same calls against snodo's test
// servers.

// A stdio server: the client starts it, owns its process and talks to it
// over its stdin and stdout.
func Example_stdio() {
	ctx := context.Background() // the connection's owner: when it is done, the connection closes
	c, err := snodo.Connect(ctx, "npx", []string{"-y", "@modelcontextprotocol/server-everything"},
		snodo.WithClientInfo("my-agent", "1.0.0"))
	if err != nil {
		log.Fatal(err) // the command did not start, or no era could be settled
	}
	defer c.Close() // closes the server's stdin; the process is always reaped
	tools, err := c.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Era(), c.ProtocolVersion(), len(tools), "tools")
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hello"})
	if err != nil {
		log.Fatal(err) // a *snodo.Error: -32001 timeout, -32000 server gone (errors.Is tells why), or the server's own
	}
	fmt.Println(res.Text())
}

// A Streamable HTTP server: the same client over HTTP.
func Example_streamableHTTP() {
	ctx := context.Background()
	c, err := snodo.ConnectHTTP(ctx, "https://example.com/mcp",
		snodo.WithHTTPHeader("Authorization", "Bearer "+os.Getenv("MCP_TOKEN"))) // or snodo.WithOAuth: docs/authorization.md
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hello"},
		snodo.Timeout(10*time.Second)) // this call's; WithTimeout sets every call's (default 60 s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Era(), c.ProtocolVersion(), res.Text())
}

// A pool of supervised servers: restarted when they die, calls spread
// over them; like every kind of client, a snodo.Session.
func Example_pool() {
	ctx := context.Background()
	pool, err := supervisor.NewPool(ctx, snodo.Command("npx", "-y", "@modelcontextprotocol/server-everything"), 3)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	var s snodo.Session = pool // as are a *snodo.Client, a *supervisor.Client and a *remote.Client
	res, err := s.CallTool(ctx, "echo", map[string]any{"message": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
}
