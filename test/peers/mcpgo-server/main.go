// Command mcpgo-server is an MCP server on mcp-go's Streamable HTTP
// server (github.com/mark3labs/mcp-go/server), or on its stdio server
// with -stdio, for snodo's interop tests (test/interop).
// It is a module of its own so that the library never depends on mcp-go;
// test/peers/install.sh builds it into test/peers/bin/mcpgo-server.
//
//	mcpgo-server -http 127.0.0.1:PORT [-stateful | -stateless]
//	mcpgo-server -http 127.0.0.1:PORT -sse
//	mcpgo-server -stdio
//
// serves on /mcp. By default (mcp-go's default) a legacy client gets an
// Mcp-Session-Id and the GET stream, but the server checks only the form
// of a session ID it is sent, not that it issued it; -stateful tracks
// sessions (an unknown one is answered 404); -stateless serves without
// them. A modern client (server/discover, 2026-07-28) is served either way.
// -sse serves mcp-go's HTTP+SSE transport of 2024-11-05 instead
// (server.NewSSEServer): the stream on /sse, messages POSTed to /message.
//
// Tools, one handler for both eras (mcp-go asks a legacy client with a
// server request what a modern one gets as input_required):
//
//	greet {name}   text "Hello, <name>!"
//	count {steps}  one notifications/progress per step, then "counted <steps>"
//	wait           reports progress once, then blocks until the call is cancelled (or 60 s)
//	cancelled      how many wait calls ended by cancellation: "cancelled <n>"
//	ask_name       elicits {name}, answers "Hello, <name>!"
//	add_tool       registers one more tool (tools/list_changed)
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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	addr := flag.String("http", "", "address to serve Streamable HTTP on (required)")
	stateless := flag.Bool("stateless", false, "serve without sessions")
	stateful := flag.Bool("stateful", false, "track sessions: an unknown session ID is answered 404")
	stdio := flag.Bool("stdio", false, "serve on stdin and stdout instead")
	sse := flag.Bool("sse", false, "serve the HTTP+SSE transport of 2024-11-05 instead (on /sse and /message)")
	flag.Parse()
	if (*addr == "") == !*stdio || (*stateless && *stateful) || (*sse && (*stdio || *stateless || *stateful)) {
		fmt.Fprintln(os.Stderr, "usage: mcpgo-server -http HOST:PORT [-stateful | -stateless | -sse]  or  mcpgo-server -stdio")
		os.Exit(2)
	}
	s := build()
	if *stdio {
		if err := server.ServeStdio(s); err != nil {
			log.Fatal(err)
		}
		return
	}
	httpServer := &http.Server{Addr: *addr, ReadHeaderTimeout: 10 * time.Second}
	if *sse {
		serveSSE(s, httpServer)
		return
	}
	handler := server.NewStreamableHTTPServer(s,
		server.WithEndpointPath("/mcp"),
		server.WithStateLess(*stateless),
		server.WithStateful(*stateful),
		server.WithStreamableHTTPServer(httpServer))
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	httpServer.Handler = mux

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = handler.Shutdown(shutdown)
		_ = httpServer.Shutdown(shutdown)
	}()
	if err := httpServer.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// serveSSE serves s on mcp-go's HTTP+SSE transport until SIGINT or
// SIGTERM.
func serveSSE(s *server.MCPServer, httpServer *http.Server) {
	handler := server.NewSSEServer(s, server.WithHTTPServer(httpServer))
	httpServer.Handler = handler
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = handler.Shutdown(shutdown)
	}()
	if err := httpServer.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func build() *server.MCPServer {
	s := server.NewMCPServer("snodo-mcpgo-peer", "1.0.0",
		server.WithToolCapabilities(true),
		server.WithElicitation(),
		server.WithInstructions("mcp-go interop peer"))

	s.AddTool(mcp.NewTool("greet", mcp.WithDescription("Greets someone."),
		mcp.WithString("name", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Hello, " + req.GetString("name", "?") + "!"), nil
		})

	s.AddTool(mcp.NewTool("count", mcp.WithDescription("Reports progress once per step."),
		mcp.WithNumber("steps", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := req.GetInt("steps", 3)
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i := 1; i <= steps; i++ {
				if token != nil {
					_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d", i),
					})
				}
			}
			return mcp.NewToolResultText(fmt.Sprintf("counted %d", steps)), nil
		})

	var cancelled atomic.Int64
	s.AddTool(mcp.NewTool("wait", mcp.WithDescription("Blocks until cancelled (at most 60 s).")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": req.Params.Meta.ProgressToken, "progress": 0, "message": "waiting",
				})
			}
			select {
			case <-ctx.Done():
				cancelled.Add(1)
				return nil, ctx.Err()
			case <-time.After(60 * time.Second):
				return mcp.NewToolResultText("waited 60 s"), nil
			}
		})
	s.AddTool(mcp.NewTool("cancelled", mcp.WithDescription("Counts the wait calls ended by cancellation.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprintf("cancelled %d", cancelled.Load())), nil
		})

	s.AddTool(mcp.NewTool("ask_name", mcp.WithDescription("Asks the user for a name.")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if answer := server.ElicitationResponse(req.Params.InputResponses, "name"); answer != nil {
				content, _ := answer.Content.(map[string]any)
				name, _ := content["name"].(string)
				return mcp.NewToolResultText("Hello, " + name + "!"), nil
			}
			return server.NewInputRequestBuilder("asked-name").
				Elicit("name", mcp.ElicitationParams{
					Mode:    mcp.ElicitationModeForm,
					Message: "What is your name?",
					RequestedSchema: map[string]any{
						"type":       "object",
						"properties": map[string]any{"name": map[string]any{"type": "string"}},
						"required":   []string{"name"},
					},
				}).ToolResult(), nil
		})

	var added atomic.Int64
	s.AddTool(mcp.NewTool("add_tool", mcp.WithDescription("Adds a tool (tools/list_changed).")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := fmt.Sprintf("extra_%d", added.Add(1))
			s.AddTool(mcp.NewTool(name, mcp.WithDescription("Added at run time.")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("extra"), nil
				})
			return mcp.NewToolResultText("added " + name), nil
		})
	return s
}
