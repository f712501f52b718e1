package connection_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/httpserver"
	"github.com/snodo/snodo/test/testserver"
)

// A stdio MCP server written in Go, run in this process: serve reads the
// client's newline-delimited JSON-RPC from in and writes the server's to
// out, as it would on its stdin and stdout. Here the project's test
// server; in a program, any Go server that serves an io.Reader and an
// io.Writer (the official SDK's or mcp-go's stdio servers do).
func ExampleInMemory() {
	serve := func(_ context.Context, in io.Reader, out io.Writer) error {
		if code := testserver.Main(nil, in, out, io.Discard); code != 0 {
			return fmt.Errorf("test server: exit status %d", code)
		}
		return nil
	}
	ctx := context.Background()
	c, err := snodo.ConnectTransport(ctx, connection.InMemory(serve))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	res, err := c.CallTool(ctx, "echo", map[string]string{"message": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	// Output: hello
}

// A Streamable HTTP endpoint as a Transport value: what snodo.ConnectHTTP
// connects to, here given to a snodo.Target (which a supervisor or a
// pool opens again for each connection it makes). Its requests carry the
// header; a client of the caller's own would make them.
func ExampleHTTP() {
	srv := httptest.NewServer(&httpserver.HTTP{Era: "modern"}) // any Streamable HTTP MCP server
	defer srv.Close()

	ctx := context.Background()
	t := connection.HTTP(srv.URL, nil, http.Header{"X-Api-Key": {"secret"}})
	c, err := snodo.TransportTarget(t).Connect(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.Era())

	res, err := c.CallTool(ctx, "echo", map[string]string{"text": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	// Output:
	// modern
	// hello
}
