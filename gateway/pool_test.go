package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// pidOf asks the server behind a legacy session for its pid.
func pidOf(t *testing.T, url, sid string) (int, int) {
	t.Helper()
	resp := testutil.PostMCP(t, url, `{"jsonrpc":"2.0","id":9,"method":"test/pid"}`, map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusOK {
		return 0, resp.StatusCode
	}
	var r struct {
		PID int `json:"pid"`
	}
	require.NoError(t, json.Unmarshal(testutil.Messages(t, resp)[0]["result"], &r))
	return r.PID, resp.StatusCode
}

// Legacy sessions are pinned to pool members in turn: each keeps its
// server for every request; killing one member's server ends (404) the
// sessions on it only, and a new session lands on a live member.
func TestLegacySessionsPinnedToMembers(t *testing.T) {
	path, err := testutil.BuildServer()
	require.NoError(t, err)
	h, err := gateway.New()
	require.NoError(t, err)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(path, "-era", "legacy"), 2, fast,
		supervisor.WithConnectOptions(h.ConnectOptions()...))
	require.NoError(t, err)
	require.NoError(t, h.Attach(p))
	srv := httptest.NewServer(h)
	defer func() { srv.CloseClientConnections(); srv.Close(); _ = h.Close(); _ = p.Close(); <-p.Done() }()
	url := srv.URL + "/mcp"

	a, b := testutil.InitializeLegacy(t, url), testutil.InitializeLegacy(t, url)
	pa, _ := pidOf(t, url, a)
	pb, _ := pidOf(t, url, b)
	require.NotEqual(t, pa, pb, "two sessions, two members")
	for range 5 {
		got, _ := pidOf(t, url, a)
		require.Equal(t, pa, got, "a session stays on its member")
	}
	require.NoError(t, syscall.Kill(pa, syscall.SIGKILL))
	testutil.AssertReaped(t, pa, 10*time.Second)
	testutil.Eventually(t, func() bool { _, code := pidOf(t, url, a); return code == http.StatusNotFound }, 10*time.Second, "the session on the killed member ends")
	got, code := pidOf(t, url, b)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, pb, got, "the other session lives on")
	c := testutil.InitializeLegacy(t, url)
	pc, code := pidOf(t, url, c)
	require.Equal(t, http.StatusOK, code)
	require.NotEqual(t, pa, pc)
}

// Cancellation both ways: a legacy client's notifications/cancelled, and
// a modern client's closed stream, cancel the call on the server.
func TestCancellationReachesTheServer(t *testing.T) {
	for _, era := range []snodo.Era{snodo.EraLegacy, snodo.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			s := serve(t, []string{"-era", string(era)})
			ctx := context.Background()
			c, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(era))
			require.NoError(t, err)
			defer c.Close()
			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := c.Request(cctx, "test/sleep", map[string]any{"ms": 30000, "honorCancel": true})
				errc <- err
			}()
			testutil.Eventually(t, func() bool {
				raw, err := s.sc.Request(ctx, "test/requests", map[string]any{"method": "test/sleep"})
				return err == nil && len(raw) > len(`{"requests":[]}`)
			}, 10*time.Second, "the call reached the server")
			cancel()
			require.Error(t, testutil.Receive(t, errc, 10*time.Second, "the cancelled call"))
			testutil.Eventually(t, func() bool {
				raw, err := s.sc.Request(ctx, "test/received", map[string]any{"method": "notifications/cancelled"})
				return err == nil && len(raw) > len(`{"messages":[]}`)
			}, 10*time.Second, "the server got notifications/cancelled")
		})
	}
}
