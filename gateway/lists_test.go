package gateway_test

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// listRequests counts the tools/list requests the backend received.
func listRequests(t *testing.T, s *served) int {
	t.Helper()
	raw, err := s.sc.Request(context.Background(), "test/requests", map[string]any{"method": "tools/list"})
	require.NoError(t, err)
	var got struct {
		Requests []json.RawMessage `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	return len(got.Requests)
}

// tools/list is answered from the cache until the server says the list
// changed; a modern client's subscription gets list_changed from the
// server, and again after the server is killed and restarted, since the
// list may have changed while it was down.
func TestListCacheAndListChanged(t *testing.T) {
	s := serve(t, []string{"-era", "modern"})
	ctx := context.Background()
	c, err := snodo.ConnectHTTP(ctx, s.url)
	require.NoError(t, err)
	defer c.Close()

	_, err = c.ListTools(ctx)
	require.NoError(t, err)
	before := listRequests(t, s)
	_, err = c.ListTools(ctx)
	require.NoError(t, err)
	require.Equal(t, before, listRequests(t, s), "the second listing came from the cache")

	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	// The gateway's own subscription may open after the client's: emit
	// until the cache was emptied (the backend is asked again).
	testutil.Eventually(t, func() bool {
		_, err := s.sc.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
		require.NoError(t, err)
		_, err = c.ListTools(ctx)
		require.NoError(t, err)
		return listRequests(t, s) > before
	}, 10*time.Second, "a list_changed emptied the cache")
	ev := testutil.Receive(t, sub.Events(), 10*time.Second, "list_changed on the client's subscription")
	require.Equal(t, "notifications/tools/list_changed", ev.Method)

	pid := s.sc.Current().ServerPID()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	testutil.AssertReaped(t, pid, 10*time.Second)
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev := <-sub.Events():
			if ev.Method == "notifications/tools/list_changed" {
				return // after the restart
			}
		case <-deadline:
			t.Fatal("no list_changed after the backend restarted")
		}
	}
}
