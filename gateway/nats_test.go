package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// A legacy client of a name served over NATS, as snodo serve --nats
// serves it: the host's legacy-era connection relays the server's
// mid-call elicitation to the gateway, which asks the client that made
// the call, and the call's log messages after logging/setLevel.
func TestRemoteNameLegacyClientGetsRequestsAndLogs(t *testing.T) {
	e, err := natsembed.Start(natsembed.Options{})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	path, err := testutil.BuildServer()
	require.NoError(t, err)
	pool, err := supervisor.NewPool(context.Background(), snodo.Command(path), 1)
	require.NoError(t, err)
	legacyPool := func(ctx context.Context, opts ...snodo.Option) (*supervisor.Pool, error) {
		return supervisor.NewPool(ctx, snodo.Command(path), 1, supervisor.WithConnectOptions(opts...))
	}
	host, err := remote.NewHost(context.Background(), e.URL(), remote.Serve("ts", pool), remote.ServeLegacy("ts", legacyPool))
	require.NoError(t, err)
	t.Cleanup(func() { _ = host.Close(); <-host.Done() })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := serveRemote(t, e.URL(), "ts")

	logs := make(chan *snodo.Notification, 16)
	answer := func(_ context.Context, req *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	c, err := snodo.ConnectHTTP(ctx, srv.URL, snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(answer),
		snodo.WithNotificationHandler(func(_ context.Context, n *snodo.Notification) {
			if n.Method == "notifications/message" {
				logs <- n
			}
		}))
	require.NoError(t, err)
	defer c.Close()
	res, err := c.CallTool(ctx, "ask", map[string]any{"rounds": 2})
	require.NoError(t, err)
	assert.Equal(t, "Hello, Ada!", res.Text())

	require.NoError(t, c.SetLoggingLevel(ctx, "info"))
	_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/message", "params": map[string]any{"level": "warning", "data": "from afar"}})
	require.NoError(t, err)
	n := testutil.Receive(t, logs, 10*time.Second, "the server's log message")
	var m snodo.LogMessage
	require.NoError(t, json.Unmarshal(n.Params, &m))
	assert.JSONEq(t, `"from afar"`, string(m.Data))
}

// serveRemote serves name, served over NATS at natsURL, behind a gateway
// as `snodo serve --nats` does: a remote client of the name, and its
// legacy-era twin for legacy clients, started by the first of them. The
// server and the clients end with the test.
func serveRemote(t *testing.T, natsURL, name string) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := gateway.New()
	require.NoError(t, err)
	main, err := remote.Dial(ctx, natsURL, name, remote.WithConnectOptions(h.ConnectOptions()...))
	require.NoError(t, err)
	t.Cleanup(func() { _ = main.Close() })
	require.NoError(t, h.Attach(main))
	var mu sync.Mutex
	var twin *remote.Client
	require.NoError(t, h.AttachLegacy(func(ctx context.Context) (snodo.Session, error) {
		c, err := remote.Dial(ctx, natsURL, name, remote.WithConnectOptions(append(h.ConnectOptions(), snodo.WithEra(snodo.EraLegacy))...))
		mu.Lock()
		twin = c
		mu.Unlock()
		return c, err
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = h.Close()
		mu.Lock()
		defer mu.Unlock()
		if twin != nil {
			_ = twin.Close()
		}
	})
	return srv
}
