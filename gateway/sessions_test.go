package gateway_test

import (
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/test/testutil"
)

// A legacy session idle past the timeout is ended: its client gets 404.
func TestSessionIdleTimeout(t *testing.T) {
	s := serve(t, []string{"-era", "legacy"}, gateway.WithSessionIdleTimeout(200*time.Millisecond))
	sid := testutil.InitializeLegacy(t, s.url)
	// Any request of the session would keep it alive: let five idle
	// timeouts pass untouched, then ask once.
	<-time.After(time.Second)
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// What a legacy session costs: the heap grown by 500 initialized
// sessions, per session (a bound, generous for -race builds, and the
// figure in the log).
func TestSessionMemory(t *testing.T) {
	const n = 500
	s := serve(t, []string{"-era", "legacy"}, gateway.WithMaxSessions(n+10))
	testutil.InitializeLegacy(t, s.url) // warm up (the server's description, the client pool)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		testutil.InitializeLegacy(t, s.url)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("heap per legacy session: %d bytes (%d sessions)", per, n)
	require.Less(t, per, int64(256<<10), fmt.Sprintf("a session costs %d bytes", per)) // generous: GC timing and -race move it
}
