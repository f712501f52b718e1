package main_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	mcp "github.com/snodo/snodo"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// pinConfig writes an mcpServers file serving the test server as ts, in
// pools of 2.
func pinConfig(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ts": map[string]any{"command": testutil.ServerPath(t), "snodo": map[string]any{"pool": 2}},
	}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "servers.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// snodo serve --nats in front of two nodes, each with pools of 2 (so a
// legacy-era pool of 2 each): every call of one legacy session reaches
// one server process; sessions spread over them; killing a session's
// server ends that session (404), and its client's new session works.
func TestServeNATSLegacySessionsPinned(t *testing.T) {
	config := pinConfig(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	startNodeAt(t, config, addr)
	startNode(t, "--config", config, "--nats", "nats://"+addr)
	_, urls := startServe(t, "--nats", "nats://"+addr, "--server", "ts")
	url := urls[0]

	pids := map[string]int{}
	var sids []string
	distinct := map[int]bool{}
	for i := 0; i < 8 && (len(distinct) < 2 || i < 4); i++ {
		sid := testutil.InitializeLegacy(t, url)
		first, code, msg := testutil.SessionPID(t, url, sid)
		require.Equal(t, http.StatusOK, code)
		require.NotZero(t, first, msg)
		for range 8 {
			got, code, msg := testutil.SessionPID(t, url, sid)
			require.Equal(t, http.StatusOK, code, msg)
			require.Equal(t, first, got, "session %d: every call reaches one server", i)
		}
		pids[sid], sids, distinct[first] = first, append(sids, sid), true
	}
	require.GreaterOrEqual(t, len(distinct), 2, "sessions spread over the servers")

	victim := pids[sids[0]]
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	testutil.Eventually(t, func() bool {
		_, code, _ := testutil.SessionPID(t, url, sids[0])
		return code == http.StatusNotFound
	}, 15*time.Second, "the session on the killed server ends (404)")
	for _, sid := range sids[1:] {
		if pids[sid] != victim {
			got, code, msg := testutil.SessionPID(t, url, sid)
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, pids[sid], got, "a session on another server lives on: %s", msg)
		}
	}
	again := testutil.InitializeLegacy(t, url)
	got, code, msg := testutil.SessionPID(t, url, again)
	require.Equal(t, http.StatusOK, code)
	require.NotZero(t, got, msg)
	require.NotEqual(t, victim, got)
	for range 4 {
		now, _, msg := testutil.SessionPID(t, url, again)
		require.Equal(t, got, now, "the new session keeps its server: %s", msg)
	}
}

// The bridge's one session keeps its calls and its resource subscription
// on one server, and when that server dies it moves to a live one (its
// client cannot initialize again): the calls work again, all on the new
// server, and the subscription is opened again there.
func TestBridgeLegacySessionRepins(t *testing.T) {
	url := bridgedNATS(t)
	for range 2 {
		cmd, args := testutil.Server(t)
		p, err := supervisor.NewPool(context.Background(), mcp.Command(cmd, args...), 1)
		require.NoError(t, err)
		legacyPool := func(ctx context.Context, opts ...mcp.Option) (*supervisor.Pool, error) {
			return supervisor.NewPool(ctx, mcp.Command(cmd, args...), 2, supervisor.WithConnectOptions(opts...))
		}
		h, err := remote.NewHost(context.Background(), url, remote.Serve("ts", p), remote.ServeLegacy("ts", legacyPool))
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = h.Close()
			testutil.Receive(t, h.Done(), 10*time.Second, "the host's servers reaped")
		})
	}
	c := connectBridge(t, url, "ts", mcp.WithEra(mcp.EraLegacy))
	pidOf := func() (int, error) {
		raw, err := c.Request(t.Context(), "test/pid", nil)
		if err != nil {
			return 0, err
		}
		var r struct {
			PID int `json:"pid"`
		}
		return r.PID, json.Unmarshal(raw, &r)
	}
	touch := func() bool {
		raw, err := c.Request(t.Context(), "test/touch", map[string]any{"uri": "test://pinned"})
		return err == nil && strings.Contains(string(raw), `"notified":true`)
	}
	_, err := c.Request(t.Context(), "resources/subscribe", map[string]any{"uri": "test://pinned"})
	require.NoError(t, err)
	first, err := pidOf()
	require.NoError(t, err)
	require.True(t, touch(), "the session's subscription is on the server its calls reach")
	for range 8 {
		got, err := pidOf()
		require.NoError(t, err)
		require.Equal(t, first, got, "every call reaches one server")
	}
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	testutil.AssertReaped(t, first, 10*time.Second)
	var moved int
	testutil.Eventually(t, func() bool {
		got, err := pidOf()
		moved = got
		return err == nil && got != first
	}, 15*time.Second, "the bridge's calls go to a live server")
	for range 4 {
		got, err := pidOf()
		require.NoError(t, err)
		require.Equal(t, moved, got, "and stay there")
	}
	testutil.Eventually(t, touch, 15*time.Second, "the subscription opened again on the new server")
}
