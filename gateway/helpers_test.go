package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// fast keeps restarts quick in tests.
var fast = supervisor.WithBackoff(supervisor.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2, Jitter: 0.2})

// served is a gateway in front of a supervised test server, on an
// httptest server.
type served struct {
	h   *gateway.Handler
	sc  *supervisor.Client
	srv *httptest.Server
	url string
}

// serve starts the test server (with args) supervised, behind a gateway.
func serve(t *testing.T, args []string, opts ...gateway.Option) *served {
	t.Helper()
	path, err := testutil.BuildServer()
	require.NoError(t, err)
	h, err := gateway.New(opts...)
	require.NoError(t, err)
	sc, err := supervisor.Connect(context.Background(), snodo.Command(path, args...), fast,
		supervisor.WithConnectOptions(append(h.ConnectOptions(), snodo.WithTimeout(20*time.Second))...))
	require.NoError(t, err)
	require.NoError(t, h.Attach(sc))
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = h.Close()
		_ = sc.Close()
		<-sc.Done()
	})
	return &served{h: h, sc: sc, srv: srv, url: srv.URL + "/mcp"}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
