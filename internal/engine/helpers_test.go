package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// start starts the test server with flags on a connection configured by
// cfg, closed (and its server checked reaped) when the test ends.
func start(t *testing.T, cfg Config, flags ...string) *Conn {
	t.Helper()
	return testutil.Start(t, func(command string, args []string) (*Conn, error) {
		cfg.Command, cfg.Args = command, args
		return Start(context.Background(), cfg)
	}, flags...)
}

func mustCall(t *testing.T, c *Conn, method string, params any) json.RawMessage {
	t.Helper()
	res, err := c.Request(context.Background(), method, params, nil)
	require.NoError(t, err, method)
	return res
}

// requireClosed checks err is the local -32000 wrapping reason.
func requireClosed(t *testing.T, err error, reason error) *jsonrpc.Error {
	t.Helper()
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, jsonrpc.CodeConnectionClosed, e.Code, err.Error())
	require.ErrorIs(t, err, jsonrpc.ErrConnectionClosed)
	if reason != nil {
		require.ErrorIs(t, err, reason)
	}
	return e
}

// receivedCancels asks the server which requests it saw cancelled.
func receivedCancels(t *testing.T, c *Conn, n int) []int64 {
	t.Helper()
	return testutil.CancelledIDs(t, mustCall(t, c, "test/waitNotification", map[string]any{"method": "notifications/cancelled", "count": n}))
}

func waitDone(t *testing.T, c *Conn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("connection not done within 20 s")
	}
}

var errTest = errors.New("test reason")
