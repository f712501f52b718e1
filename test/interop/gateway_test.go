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

// goSDKSeen is what test/peers/gosdk-client prints.
type goSDKSeen struct {
	Tools       []string `json:"tools"`
	Progress    int      `json:"progress"`
	Late        int      `json:"late_progress"`
	Sampled     int      `json:"sampled"`
	Elicited    int      `json:"elicited"`
	Sampling    string   `json:"sampling"`
	Logs        int      `json:"logs"`
	Updates     int      `json:"updates"`
	ListChanged int      `json:"list_changed"`

	InflightError           string  `json:"inflight_error"`
	RecoverySecs            float64 `json:"recovery_seconds"`
	Reconnects              int     `json:"reconnects"`
	ListChangedAfterRestart bool    `json:"list_changed_after_restart"`
}

// checkGoSDKBasics asserts what every run of the go-sdk client must see
// through a gateway or a bridge in front of server-everything.
func checkGoSDKBasics(t *testing.T, seen goSDKSeen) {
	t.Helper()
	require.Contains(t, seen.Tools, "trigger-long-running-operation")
	// The SDK runs notification handlers on a goroutine of their own, so
	// a progress handler may run after its call returned even when the
	// notification came first on the wire (the TypeScript client's test
	// checks that order): count both.
	require.Equal(t, 5, seen.Progress+seen.Late, "every progress update of the call")
	require.Equal(t, 1, seen.Sampled, "the client's own sampling handler answered")
	require.Contains(t, seen.Sampling, "sampled by the go-sdk client")
	require.Equal(t, 1, seen.Elicited, "the client's own elicitation handler answered")
	require.Positive(t, seen.Logs, "log messages after logging/setLevel")
	require.Positive(t, seen.Updates, "resource updates after resources/subscribe")
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
	t.Logf("%s", out)
	var seen goSDKSeen
	require.NoError(t, json.Unmarshal(out, &seen), string(out))
	checkGoSDKBasics(t, seen)
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
	t.Logf("%s", out)
	var seen goSDKSeen
	require.NoError(t, json.Unmarshal(out, &seen), string(out))
	checkGoSDKBasics(t, seen)
	require.NotEmpty(t, seen.InflightError)
	require.Less(t, seen.RecoverySecs, 5.0, "a call succeeded again within 5 s")
	// A session that outlived the restart is told the lists may have
	// changed; one that ended with its member (404) was initialized
	// again by the client, which lists anew.
	require.True(t, seen.ListChangedAfterRestart || seen.Reconnects > 0, "tools/list_changed after the restart, or a new session")
}
