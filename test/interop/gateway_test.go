package interop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
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
	testutil.ReadClientReport(t, out).Check(t, "TypeScript")
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

// The official Go SDK's client through the gateway, against
// server-everything: the same fidelity as the TypeScript client's.
func TestGatewayGoSDKClient(t *testing.T) {
	url, _ := serveEverything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.PeerPath(t, "bin/gosdk-client"), "-url", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	testutil.ReadClientReport(t, out).Check(t, "go-sdk")
}

// A backend killed mid-session, under the go-sdk client through the
// gateway: the call in flight gets a clear error, calls work again within
// 5 s of it, and the client learns that the tools may have changed.
func TestGatewayBackendKilledMidSession(t *testing.T) {
	url, sc := serveEverything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.PeerPath(t, "bin/gosdk-client"), "-url", url, "-restart")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the client's first line; stderr:\n%s", stderr.String())
	require.Equal(t, `{"phase":"inflight"}`, lines.Text())
	pid := sc.Current().ServerPID()
	require.Positive(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.True(t, lines.Scan(), "the client's report; stderr:\n%s", stderr.String())
	out := lines.Bytes()
	require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	seen := testutil.ReadClientReport(t, out)
	seen.Check(t, "go-sdk")
	require.NotEmpty(t, seen.InflightError)
	require.Less(t, seen.RecoverySecs, 5.0, "a call succeeded again within 5 s")
	// A session that outlived the restart is told the lists may have
	// changed; one that ended with its member (404) was initialized
	// again by the client, which lists anew.
	require.True(t, seen.ListChangedAfterRestart || seen.Reconnects > 0, "tools/list_changed after the restart, or a new session")
}
