package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// A legacy client that set a log level gets the server's log messages
// of its call, through its own notification handler.
func TestLegacyLogsAfterSetLevel(t *testing.T) {
	s := serve(t, []string{"-era", "legacy"})
	ctx := context.Background()
	logs := make(chan *snodo.Notification, 16)
	c, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(snodo.EraLegacy),
		snodo.WithNotificationHandler(func(_ context.Context, n *snodo.Notification) {
			if n.Method == "notifications/message" {
				logs <- n
			}
		}))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetLoggingLevel(ctx, "info"))
	_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/message", "params": map[string]any{"level": "info", "data": "hello from the server"}})
	require.NoError(t, err)
	n := testutil.Receive(t, logs, 10*time.Second, "the server's log message")
	var m snodo.LogMessage
	require.NoError(t, json.Unmarshal(n.Params, &m))
	require.JSONEq(t, `"hello from the server"`, string(m.Data))
}

// A backend killed while a modern client's call is in flight: the call
// fails with a clear -32000, and calls work again within 5 s.
func TestBackendKilledMidCall(t *testing.T) {
	s := serve(t, []string{"-era", "modern"})
	ctx := context.Background()
	c, err := snodo.ConnectHTTP(ctx, s.url)
	require.NoError(t, err)
	defer c.Close()
	pid := s.sc.Current().ServerPID()
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 30000}, snodo.OnProgress(func(snodo.Progress) {}))
		errc <- err
	}()
	go func() {
		testutil.Eventually(t, func() bool {
			raw, err := s.sc.Request(ctx, "test/requests", map[string]any{"method": "test/sleep"})
			return err == nil && len(raw) > len(`{"requests":[]}`)
		}, 10*time.Second, "the call reached the server")
		close(started)
	}()
	testutil.Receive(t, started, 15*time.Second, "the call in flight")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	err = testutil.Receive(t, errc, 10*time.Second, "the in-flight call's error")
	var e *snodo.Error
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, snodo.CodeConnectionClosed, e.Code)
	require.Contains(t, e.Message, "gateway")
	killed := time.Now()
	testutil.Eventually(t, func() bool {
		_, err := c.CallTool(ctx, "echo", map[string]any{"message": "again"})
		return err == nil
	}, 5*time.Second, "calls work again within 5 s")
	t.Logf("calls worked again %v after the kill", time.Since(killed))
}
