package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// post sends one message with headers and returns the response.
func post(t *testing.T, url string, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// messages reads every JSON-RPC message of a response: its one JSON
// body, or each SSE event's data.
func messages(t *testing.T, resp *http.Response) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &m), string(b))
		return append(out, m)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(data), &m), data)
			out = append(out, m)
			if m["method"] == nil {
				break // the response ends the stream
			}
		}
	}
	return out
}

// initialize opens a legacy session and returns its id.
func initialize(t *testing.T, url string) string {
	t.Helper()
	resp := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	id := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	msgs := messages(t, resp)
	require.Contains(t, string(msgs[0]["result"]), `"protocolVersion":"2025-11-25"`)
	resp = post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": id})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return id
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
