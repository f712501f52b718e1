package bench_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// The go-sdk client through the gateway, against the TypeScript reference
// server (server-everything, stdio, supervised): every progress update,
// its own sampling and elicitation handlers
// asked and their answers in the results, logs after setLevel, resource
// updates after subscribe. The legacy era: go-sdk's default.
func TestGatewayGoSDKClientEverything(t *testing.T) {
	node := testutil.NodePath(t)
	entry := testutil.PeerPath(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	h, err := gateway.New()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := supervisor.Connect(context.Background(), snodo.Command(node, entry, "stdio"),
		supervisor.WithConnectOptions(append(h.ConnectOptions(), snodo.WithTimeout(30*time.Second))...))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sc.Close(); <-sc.Done() }()
	if err := h.Attach(sc); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var progress, sampled, elicited, logs, updates atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Model: "go-sdk", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by go-sdk"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		LoggingMessageHandler:  func(context.Context, *mcp.LoggingMessageRequest) { logs.Add(1) },
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { updates.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.5, "steps": 5}}
	params.SetProgressToken("p-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	// go-sdk runs notification handlers off its reader, so the last may
	// run just after CallTool returns; the order on the wire is checked by
	// the TypeScript client's test, whose SDK raises an error for a
	// progress notification after its result.
	testutil.Eventually(t, func() bool { return progress.Load() == 5 }, 5*time.Second, "5 progress updates")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "sampled by go-sdk") || sampled.Load() != 1 {
		t.Errorf("sampling: %q, handler asked %d times", text, sampled.Load())
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request", Arguments: map[string]any{}}); err != nil || elicited.Load() != 1 {
		t.Errorf("elicitation: %v, handler asked %d times", err, elicited.Load())
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-simulated-logging", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, func() bool { return logs.Load() > 0 }, 15*time.Second, "a log message after setLevel")
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) == 0 {
		t.Fatalf("resources: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: rs.Resources[0].URI}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, func() bool { return updates.Load() > 0 }, 15*time.Second, "a resource update after subscribe")
}
