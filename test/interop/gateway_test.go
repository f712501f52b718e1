package interop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// serveEverything serves the TypeScript reference server (stdio,
// supervised) through a gateway at the returned URL.
func serveEverything(t *testing.T) (string, *supervisor.Client) {
	t.Helper()
	node := testutil.NodePath(t)
	entry := testutil.PeerPath(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	h, err := gateway.New()
	require.NoError(t, err)
	sc, err := supervisor.Connect(context.Background(), snodo.Command(node, entry, "stdio"),
		supervisor.WithConnectOptions(append(h.ConnectOptions(), snodo.WithTimeout(30*time.Second))...))
	require.NoError(t, err)
	require.NoError(t, h.Attach(sc))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = h.Close()
		_ = sc.Close()
		<-sc.Done()
	})
	return srv.URL + "/mcp", sc
}

// The TypeScript SDK's client through the gateway, against
// server-everything: progress before every result (the SDK raises an
// error for a progress notification that comes after its result), its
// own handlers answering sampling and elicitation, logs after setLevel,
// resource updates after subscribe.
func TestGatewayTypeScriptClient(t *testing.T) {
	url, _ := serveEverything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.NodePath(t), testutil.PeerPath(t, "ts-client/gateway-client.mjs"), url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	var seen struct {
		Errors      []string `json:"errors"`
		Tools       []string `json:"tools"`
		Progress    int      `json:"progress"`
		Sampled     int      `json:"sampled"`
		Elicited    int      `json:"elicited"`
		Sampling    string   `json:"sampling"`
		Logs        int      `json:"logs"`
		Updates     int      `json:"updates"`
		Elicitation string   `json:"elicitation"`
	}
	require.NoError(t, json.Unmarshal(out, &seen), string(out))
	t.Logf("%s", out)
	require.Empty(t, seen.Errors, "the SDK raised no error (a late progress notification would be one)")
	require.Contains(t, seen.Tools, "trigger-long-running-operation")
	require.Equal(t, 5, seen.Progress, "every progress update, before the result")
	require.Equal(t, 1, seen.Sampled, "the client's own sampling handler answered")
	require.Contains(t, seen.Sampling, "sampled by the TypeScript client")
	require.Equal(t, 1, seen.Elicited, "the client's own elicitation handler answered")
	require.Positive(t, seen.Logs)
	require.Positive(t, seen.Updates)
}

// snodo's own client, legacy era, through the gateway against
// server-everything: its handler answers the server's sampling request,
// and progress arrives before the result.
func TestGatewaySnodoClientEverything(t *testing.T) {
	url, _ := serveEverything(t)
	ctx := context.Background()
	sampled := 0
	c, err := snodo.ConnectHTTP(ctx, url, snodo.WithEra(snodo.EraLegacy),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Sampling: &snodo.SamplingCapability{}}),
		snodo.WithServerRequestHandler(func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
			sampled++
			return handlers.CreateMessageResult{Model: "go", Role: "assistant", Content: handlers.SamplingContents{{Type: "text", Text: "sampled by snodo"}}}, nil
		}))
	require.NoError(t, err)
	defer c.Close()
	res, err := c.CallTool(ctx, "trigger-sampling-request", map[string]any{"prompt": "hi"})
	require.NoError(t, err)
	b, _ := json.Marshal(res)
	require.Contains(t, string(b), "sampled by snodo")
	require.Equal(t, 1, sampled)

	updates := 0
	_, err = c.CallTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3},
		snodo.OnProgress(func(snodo.Progress) { updates++ }))
	require.NoError(t, err)
	require.Equal(t, 3, updates)
}
