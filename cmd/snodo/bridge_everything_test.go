package main_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcp "github.com/snodo/snodo"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// everythingHost serves the TypeScript reference server
// (server-everything, stdio, legacy era) as name on the NATS server at
// url, in this process, as `snodo node` serves a server: a pool, and a
// legacy-era pool for legacy-era callers (remote.ServeLegacy), which the
// bridge's legacy clients reach. It returns the host and a function
// returning the pool that serves them (the legacy-era one, once the
// first of them started it).
func everythingHost(t *testing.T, url, name string) (*remote.Host, func() *supervisor.Pool) {
	t.Helper()
	entry := testutil.PeerPath(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	target := mcp.Command(testutil.NodePath(t), entry, "stdio")
	backoff := supervisor.WithBackoff(supervisor.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2})
	p, err := supervisor.NewPool(context.Background(), target, 1, backoff, supervisor.WithConnectOptions(mcp.WithTimeout(30*time.Second)))
	require.NoError(t, err)
	legacy := make(chan *supervisor.Pool, 1)
	start := func(ctx context.Context, opts ...mcp.Option) (*supervisor.Pool, error) {
		lp, err := supervisor.NewPool(ctx, target, 1, backoff, supervisor.WithConnectOptions(append([]mcp.Option{mcp.WithTimeout(30 * time.Second)}, opts...)...))
		if err == nil {
			legacy <- lp
		}
		return lp, err
	}
	h, err := remote.NewHost(context.Background(), url, remote.Serve(name, p), remote.ServeLegacy(name, start))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = h.Close()
		testutil.Receive(t, h.Done(), 10*time.Second, "the host's servers reaped")
	})
	var served *supervisor.Pool
	return h, func() *supervisor.Pool {
		if served == nil {
			served = testutil.Receive(t, legacy, 30*time.Second, "the host's legacy-era pool")
		}
		return served
	}
}

// The TypeScript SDK's client through the bridge, against
// server-everything served by a host: every progress update before its
// result (the SDK raises an error for one that comes after), its own
// handlers answering sampling and elicitation, logs after setLevel,
// resource updates after subscribe. The same client script drives the
// gateway over HTTP (test/interop).
func TestBridgeTypeScriptClientEverything(t *testing.T) {
	url := bridgedNATS(t)
	everythingHost(t, url, "everything")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.NodePath(t), testutil.PeerPath(t, "ts-client/gateway-client.mjs"),
		"--stdio", snodoBin, "bridge", "--nats", url, "--server", "everything")
	cmd.Env = append(os.Environ(), "GATEWAY_CLIENT_SKIP="+strings.Join(bridgeSkip, ","))
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	testutil.ReadClientReport(t, out).Check(t, "TypeScript", bridgeSkip...)
}

// A bridge listed in a host's configuration survives a restart of the
// node it reaches (`snodo node --listen`, so the URL stays): its legacy
// client is told its lists may have changed once the new node serves,
// then gets the new node's own list changes, and its calls work again.
// Before, the list-change subscription ended with the first node.
func TestBridgeAcrossNodeRestart(t *testing.T) {
	config := nodeConfig(t, map[string][]string{"echo": {"-era", "legacy"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	node := startNodeAt(t, config, addr)
	changed := make(chan string, 16)
	c := connectBridge(t, "nats://"+addr, "echo", mcp.WithEra(mcp.EraLegacy), mcp.WithNotificationHandler(func(_ context.Context, n *mcp.Notification) {
		select {
		case changed <- n.Method:
		default:
		}
	}))
	ctx := t.Context()
	_, err = c.CallTool(ctx, "echo", map[string]any{"message": "first node"})
	require.NoError(t, err)

	node.signal(t, syscall.SIGTERM, "SIGTERM")
	startNodeAt(t, config, addr)
	awaitToolsChanged(t, changed, 30*time.Second, "the gap's list change, once the new node serves")
	testutil.Eventually(t, func() bool {
		_, err := c.CallTool(ctx, "echo", map[string]any{"message": "second node"})
		return err == nil
	}, 10*time.Second, "a call through the new node")
	for len(changed) > 0 {
		<-changed
	}
	_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	awaitToolsChanged(t, changed, 10*time.Second, "the new node's own list change")
}

// The MCP server behind a host killed while a call through the bridge is
// in flight: the call fails with a clear -32000 (not a hang), and calls
// work again within 5 s, once the host's pool has restarted it.
func TestBridgeBackendKilledMidCall(t *testing.T) {
	url := bridgedNATS(t)
	cmd, args := testutil.Server(t, "-era", "legacy")
	p, err := supervisor.NewPool(context.Background(), mcp.Command(cmd, args...), 1,
		supervisor.WithBackoff(supervisor.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2}))
	require.NoError(t, err)
	h, err := remote.NewHost(context.Background(), url, remote.Serve("bridged", p))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = h.Close()
		testutil.Receive(t, h.Done(), 10*time.Second, "the host's servers reaped")
	})
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy))
	ctx := t.Context()
	started := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", map[string]any{"ms": 60000}, mcp.OnProgress(func(mcp.Progress) {
			select {
			case started <- struct{}{}:
			default:
			}
		}))
		errc <- err
	}()
	testutil.Receive(t, started, 20*time.Second, "the slow call's first progress")
	pid := p.Members()[0].Current().ServerPID()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	err = testutil.Receive(t, errc, 10*time.Second, "the in-flight call's error")
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, mcp.CodeConnectionClosed, e.Code, "%v", err)
	t.Logf("the in-flight call: %v", err)
	killed := time.Now()
	testutil.Eventually(t, func() bool {
		_, err := c.CallTool(ctx, "echo", map[string]any{"message": "again"})
		return err == nil
	}, 5*time.Second, "calls work again within 5 s")
	t.Logf("calls worked again %v after the kill", time.Since(killed))
}

// bridgeSkip are the steps of the interop clients left out through the
// bridge: none (the hosts' legacy-era connection relays the server's
// requests and logs to the bridge's legacy clients, and serves their
// subscriptions).
var bridgeSkip []string

// goSDKClient runs test/peers/gosdk-client (the official Go SDK's client)
// on the bridge to name, with extra flags.
func goSDKClient(ctx context.Context, t *testing.T, url, name string, flags ...string) *exec.Cmd {
	args := append(flags, "--", snodoBin, "bridge", "--nats", url, "--server", name)
	cmd := exec.CommandContext(ctx, testutil.PeerPath(t, "bin/gosdk-client"), args...)
	cmd.Env = append(os.Environ(), "GATEWAY_CLIENT_SKIP="+strings.Join(bridgeSkip, ","))
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// The official Go SDK's client through the bridge, against
// server-everything behind a host: the fidelity of the gateway.
func TestBridgeGoSDKClient(t *testing.T) {
	url := bridgedNATS(t)
	everythingHost(t, url, "everything")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := goSDKClient(ctx, t, url, "everything")
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	testutil.ReadClientReport(t, out).Check(t, "go-sdk", bridgeSkip...)
}

// The server behind the host killed mid-session, under the go-sdk
// client through the bridge: the call in flight gets a clear error, calls
// work again within 5 s on the same session (a stdio client cannot
// initialize again), and the client is told the tools may have changed.
func TestBridgeGoSDKClientBackendKilled(t *testing.T) {
	url := bridgedNATS(t)
	_, served := everythingHost(t, url, "everything")
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cmd := goSDKClient(ctx, t, url, "everything", "-restart")
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the client's first line; stderr:\n%s", stderr.String())
	require.Equal(t, `{"phase":"inflight"}`, lines.Text())
	pid := served().Members()[0].Current().ServerPID()
	require.Positive(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.True(t, lines.Scan(), "the client's report; stderr:\n%s", stderr.String())
	out := slices.Clone(lines.Bytes())
	require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	seen := testutil.ReadClientReport(t, out)
	seen.Check(t, "go-sdk", bridgeSkip...)
	require.NotEmpty(t, seen.InflightError)
	require.Less(t, seen.RecoverySecs, 5.0, "a call succeeded again within 5 s")
	require.Zero(t, seen.Reconnects, "the bridge's session outlived the restart")
	require.True(t, seen.ListChangedAfterRestart, "tools/list_changed after the restart")
}

// The same clients over Streamable HTTP through `snodo serve --nats` in
// front of server-everything served as a node serves it: serve's legacy
// clients go to its legacy-era twin, as the bridge's do, and pass every
// step, the resource update after subscribe included (the twin's
// subscription is on the legacy-era pool its calls go to). Each client
// has a server of its own: server-everything's simulated logs and updates
// are toggled per process on stdio, so a second client would turn off
// what the first turned on.
func TestServeNATSInteropClients(t *testing.T) {
	for _, who := range []string{"TypeScript", "go-sdk"} {
		t.Run(who, func(t *testing.T) {
			url := bridgedNATS(t)
			everythingHost(t, url, "everything")
			_, urls := startServe(t, "--nats", url, "--server", "everything")
			require.Len(t, urls, 1)
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			var cmd *exec.Cmd
			if who == "TypeScript" {
				cmd = exec.CommandContext(ctx, testutil.NodePath(t), testutil.PeerPath(t, "ts-client/gateway-client.mjs"), urls[0])
			} else {
				cmd = exec.CommandContext(ctx, testutil.PeerPath(t, "bin/gosdk-client"), "-url", urls[0])
			}
			var stderr testutil.Buffer
			cmd.Stderr = &stderr
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.Output()
			require.NoError(t, err, "stderr:\n%s", stderr.String())
			testutil.ReadClientReport(t, out).Check(t, who)
		})
	}
}
