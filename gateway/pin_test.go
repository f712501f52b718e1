package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// subscribe subscribes a legacy session to test://pinned.
func subscribe(t *testing.T, url, sid string) {
	t.Helper()
	resp := testutil.PostMCP(t, url, `{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"test://pinned"}}`, map[string]string{"Mcp-Session-Id": sid})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	msgs := testutil.Messages(t, resp)
	require.Nil(t, msgs[len(msgs)-1]["error"], "%s", msgs[len(msgs)-1]["error"])
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// pinnedGateway serves the test server as ts over NATS from n hosts,
// each with a legacy-era pool of 2, behind a gateway as `snodo serve
// --nats` serves it, and returns the gateway's URL and the hosts.
func pinnedGateway(t *testing.T, n int) (string, []*remote.Host) {
	t.Helper()
	e, err := natsembed.Start(natsembed.Options{})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	path, err := testutil.BuildServer()
	require.NoError(t, err)
	hosts := make([]*remote.Host, n)
	for i := range hosts {
		pool, err := supervisor.NewPool(context.Background(), snodo.Command(path), 1, fast)
		require.NoError(t, err)
		legacyPool := func(ctx context.Context, opts ...snodo.Option) (*supervisor.Pool, error) {
			return supervisor.NewPool(ctx, snodo.Command(path), 2, fast, supervisor.WithConnectOptions(opts...))
		}
		h, err := remote.NewHost(context.Background(), e.URL(), remote.Serve("ts", pool), remote.ServeLegacy("ts", legacyPool))
		require.NoError(t, err)
		hosts[i] = h
		t.Cleanup(func() { _ = h.Close(); <-h.Done() })
	}

	srv := serveRemote(t, e.URL(), "ts")
	return srv.URL + "/mcp", hosts
}

// A name served over NATS by two hosts, each with a legacy-era pool of 2,
// behind the gateway as `snodo serve --nats` serves it: each legacy
// session's calls all reach one server process, sessions spread over
// them, a session's resource subscription is on its server, killing a
// session's server ends that session (404) while the
// others live on, a new session works, and a host that stops ends the
// sessions it held.
func TestRemoteLegacySessionsPinned(t *testing.T) {
	url, hosts := pinnedGateway(t, 2)

	// Sessions until two landed on different servers; each keeps its own.
	pids := map[string]int{}
	var sids []string
	distinct := map[int]bool{}
	for i := 0; i < 8 && (len(distinct) < 2 || i < 4); i++ {
		sid := testutil.InitializeLegacy(t, url)
		if i%2 == 0 { // the subscription comes first: it pins the session
			subscribe(t, url, sid)
		}
		first, code, msg := testutil.SessionPID(t, url, sid)
		require.Equal(t, http.StatusOK, code)
		require.NotZero(t, first, "session %d: %s", i, msg)
		if i%2 == 1 {
			subscribe(t, url, sid)
		}
		for range 10 {
			got, code, msg := testutil.SessionPID(t, url, sid)
			require.Equal(t, http.StatusOK, code, msg)
			require.Equal(t, first, got, "session %d: every call reaches one server", i)
		}
		// The session's resource subscription is on its server too.
		resp := testutil.PostMCP(t, url, `{"jsonrpc":"2.0","id":3,"method":"test/touch","params":{"uri":"test://pinned"}}`, map[string]string{"Mcp-Session-Id": sid})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.JSONEq(t, `{"notified":true}`, string(testutil.Messages(t, resp)[0]["result"]), "session %d: its subscription is on the server its calls reach", i)
		pids[sid], sids, distinct[first] = first, append(sids, sid), true
	}
	require.GreaterOrEqual(t, len(distinct), 2, "sessions spread over the servers")

	// Kill the first session's server: that session ends, the sessions on
	// other servers live on, and a new session works.
	victim := pids[sids[0]]
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	testutil.AssertReaped(t, victim, 10*time.Second)
	testutil.Eventually(t, func() bool {
		_, code, _ := testutil.SessionPID(t, url, sids[0])
		return code == http.StatusNotFound
	}, 10*time.Second, "the session on the killed server ends (404)")
	for _, sid := range sids[1:] {
		if pids[sid] == victim {
			continue
		}
		got, code, msg := testutil.SessionPID(t, url, sid)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, pids[sid], got, "a session on another server lives on: %s", msg)
	}
	again := testutil.InitializeLegacy(t, url)
	got, code, msg := testutil.SessionPID(t, url, again)
	require.Equal(t, http.StatusOK, code)
	require.NotZero(t, got, msg)
	require.NotEqual(t, victim, got)

	// A host that stops ends the sessions it held, and only those.
	require.NoError(t, hosts[0].Close())
	<-hosts[0].Done()
	ended, lived := 0, 0
	for _, sid := range append(sids[1:], again) {
		if pids[sid] == victim {
			continue
		}
		pid := pids[sid]
		if sid == again {
			pid = got
		}
		if !alive(pid) {
			testutil.Eventually(t, func() bool {
				_, code, _ := testutil.SessionPID(t, url, sid)
				return code == http.StatusNotFound
			}, 10*time.Second, "a session of the stopped host ends (404)")
			ended++
			continue
		}
		now, code, msg := testutil.SessionPID(t, url, sid)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, pid, now, "a session of the other host lives on: %s", msg)
		lived++
	}
	t.Logf("after the host stopped: %d sessions ended, %d lived on", ended, lived)
	fresh := testutil.InitializeLegacy(t, url)
	_, code, msg = testutil.SessionPID(t, url, fresh)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, msg, "a new session lands on the live host")
}

// A session's first call makes its pin, and the calls the session makes
// meanwhile wait for it, but only until its host has chosen the server:
// a long first call does not hold the others back, and they all reach
// the same server.
func TestRemoteLegacyFirstCallDoesNotHoldTheOthers(t *testing.T) {
	url, _ := pinnedGateway(t, 2)
	sid := testutil.InitializeLegacy(t, url)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":20000},"_meta":{"progressToken":"p"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() { // the slow call runs: its first progress came
		if strings.Contains(sc.Text(), "notifications/progress") {
			break
		}
	}
	pids := map[int]bool{}
	for range 3 {
		pid, code, msg := testutil.SessionPID(t, url, sid)
		require.Equal(t, http.StatusOK, code)
		require.NotZero(t, pid, msg)
		pids[pid] = true
	}
	require.Len(t, pids, 1, "the session's calls reach one server")
	for pid := range pids {
		// The slow call is on that server too: killing it ends the call.
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	var last string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			last = sc.Text()
		}
	}
	require.Contains(t, last, `"error"`, "the slow call ended with its server")
}
