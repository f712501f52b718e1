package snodo_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/snodo/snodo"
)

// A tracer provider from the OpenTelemetry SDK records a client span per
// request, named after the MCP method and the tool, with the attributes
// of the MCP semantic conventions; the request carried the span's
// context to the server in params._meta.traceparent. In production the
// SDK exports to a collector instead (docs/observability.md).
func ExampleWithTracerProvider() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	cmd, args := exampleServer()
	c, err := snodo.Connect(context.Background(), cmd, args, snodo.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, parent := tp.Tracer("my-agent").Start(context.Background(), "answer the user")
	if _, err := c.CallTool(ctx, "echo", map[string]any{"message": "hi"}); err != nil {
		log.Fatal(err)
	}
	parent.End()

	for _, s := range spans.Ended() {
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			continue // the handshake's span, a root of its own
		}
		var attrs []string
		for _, kv := range s.Attributes() {
			if kv.Key != "jsonrpc.request.id" { // varies
				attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
			}
		}
		fmt.Println(s.Name(), s.SpanKind())
		fmt.Println(" ", strings.Join(attrs, "\n  "))
	}
	// Output:
	// tools/call echo client
	//   mcp.method.name=tools/call
	//   network.transport=pipe
	//   mcp.protocol.version=2026-07-28
	//   gen_ai.operation.name=execute_tool
	//   gen_ai.tool.name=echo
}
