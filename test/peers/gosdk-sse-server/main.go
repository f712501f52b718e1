// Command gosdk-sse-server is an MCP server on the official Go SDK's
// HTTP+SSE transport of protocol version 2024-11-05 (mcp.NewSSEHandler),
// for snodo's tests of that transport (test/interop). It is a module of
// its own so that the library never depends on the SDK;
// test/peers/install.sh builds it into test/peers/bin/gosdk-sse-server.
//
//	gosdk-sse-server -http 127.0.0.1:PORT
//
// serves the SSE stream on /sse; the endpoint event names
// /sse?sessionid=…, where messages are POSTed.
//
// Tools:
//
//	greet {name}   text "Hello, <name>!"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

func main() {
	addr := flag.String("http", "", "address to serve the HTTP+SSE transport on (required)")
	flag.Parse()
	if *addr == "" {
		fmt.Fprintln(os.Stderr, "usage: gosdk-sse-server -http HOST:PORT")
		os.Exit(2)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "snodo-gosdk-sse-peer", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
	httpServer := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = httpServer.Shutdown(shutdown)
	}()
	if err := httpServer.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
