package snodo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/httpserver"
)

// closeAndWait closes c and waits (bounded) for its Done.
func closeAndWait(t *testing.T, c *Client) {
	t.Helper()
	require.NoError(t, c.Close())
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed 10 s after Close")
	}
}

// TestSSEFallback: ConnectHTTP to the URL of an HTTP+SSE server
// (2024-11-05) falls back to that transport when its POSTs are refused,
// and connection.SSE goes there directly, without a POST to the URL;
// both list and call tools in the legacy era.
func TestSSEFallback(t *testing.T) {
	connects := map[string]func(ctx context.Context, url string) (*Client, error){
		"ConnectHTTP": func(ctx context.Context, url string) (*Client, error) { return ConnectHTTP(ctx, url) },
		"SSE": func(ctx context.Context, url string) (*Client, error) {
			return TransportTarget(connection.SSE(url, nil, nil)).Connect(ctx)
		},
	}
	for name, connect := range connects {
		t.Run(name, func(t *testing.T) {
			srv := &httpserver.SSE{}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			c, err := connect(t.Context(), hs.URL+"/sse")
			require.NoError(t, err)
			assert.Equal(t, EraLegacy, c.Era())
			assert.Equal(t, "2024-11-05", c.ProtocolVersion())
			tools, err := c.ListTools(t.Context())
			require.NoError(t, err)
			require.Len(t, tools, 1)
			assert.Equal(t, "echo", tools[0].Name)
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "over the old transport"})
			require.NoError(t, err)
			assert.Equal(t, "over the old transport", res.Text())
			assert.Equal(t, int64(1), srv.Streams(), "one stream: the server/discover probe is never posted to it")
			closeAndWait(t, c)
			assert.ErrorIs(t, c.Err(), ErrClosed)
		})
	}
}

// TestSSEStreamEndStopsTheClient: the stream is the session; its end is
// the server's exit, with snodo.ErrStreamEnded.
func TestSSEStreamEndStopsTheClient(t *testing.T) {
	srv := &httpserver.SSE{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, err := ConnectHTTP(t.Context(), hs.URL+"/sse")
	require.NoError(t, err)
	defer closeAndWait(t, c)
	// A call answered means notifications/initialized, posted before it
	// in order, was taken: no POST is left in flight to meet the
	// forgotten session's 404 before the end of the stream is seen (on a
	// loaded machine it could, and that reason would come first).
	_, err = c.ListTools(t.Context())
	require.NoError(t, err)
	srv.EndStreams()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not stop 10 s after the stream ended")
	}
	assert.ErrorIs(t, c.Err(), ErrStreamEnded)
	_, err = c.ListTools(t.Context())
	assert.ErrorIs(t, err, ErrConnectionClosed)
}

// TestSSEHostileServers: an endpoint on another origin is refused, and
// a stream without an endpoint event fails at once (a first event of
// another kind) or within the connect's ctx (no event at all).
func TestSSEHostileServers(t *testing.T) {
	for _, tc := range []struct {
		misbehave string
		want      string
		within    time.Duration
	}{
		{"foreign-endpoint", "another origin", 3 * time.Second},
		{"no-endpoint", `its first event is "message", not endpoint`, 3 * time.Second},
		{"silent", "context deadline exceeded", 4 * time.Second},
	} {
		t.Run(tc.misbehave, func(t *testing.T) {
			srv := &httpserver.SSE{Misbehave: tc.misbehave}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := ConnectHTTP(ctx, hs.URL+"/sse")
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, "405", "the refused POST is named too")
			assert.Less(t, time.Since(start), tc.within)
			if tc.misbehave != "silent" {
				_, err = TransportTarget(connection.SSE(hs.URL+"/sse", nil, nil)).Connect(t.Context())
				assert.ErrorContains(t, err, tc.want)
			}
		})
	}
}

// TestSSEFallbackNotForOtherStatuses: only 400, 404 and 405 send the
// client to the old transport.
func TestSSEFallbackNotForOtherStatuses(t *testing.T) {
	srv := &httpserver.HTTP{Era: "legacy", Misbehave: "5xx", OnConnect: true}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	_, err := ConnectHTTP(t.Context(), hs.URL+"/mcp")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "HTTP+SSE", "a 500 is no reason to try the old transport")
}

// TestSSERequestsPostedAtOnce: requests are not posted one after the
// other (over a network each POST's round trip would add up): eight
// calls whose POSTs the server holds until all eight have arrived all
// complete.
func TestSSERequestsPostedAtOnce(t *testing.T) {
	const n = 8
	srv := &httpserver.SSE{}
	var arrived atomic.Int64
	all := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				if arrived.Add(1) == n {
					close(all)
				}
				select {
				case <-all:
				case <-r.Context().Done():
				}
			}
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := ConnectHTTP(ctx, hs.URL+"/sse")
	require.NoError(t, err)
	defer closeAndWait(t, c)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
			if assert.NoError(t, err, "held POSTs: were the requests posted one at a time?") {
				assert.Equal(t, "x", res.Text())
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, n, arrived.Load())
}

// TestSSECloseAbortsAHeldPost: Close does not wait for a POST the
// server holds: it ends the stream and the POST, and the call fails as
// closed.
func TestSSECloseAbortsAHeldPost(t *testing.T) {
	srv := &httpserver.SSE{}
	held := make(chan struct{})
	var once sync.Once
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				once.Do(func() { close(held) })
				<-r.Context().Done() // held until the client gives up
				return
			}
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	c, err := ConnectHTTP(t.Context(), hs.URL+"/sse")
	require.NoError(t, err)
	called := make(chan error, 1)
	go func() {
		_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "x"})
		called <- err
	}()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the call's POST did not arrive")
	}
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the held POST")
	}
	select {
	case err := <-called:
		assert.ErrorIs(t, err, ErrConnectionClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end with the connection")
	}
	<-c.Done()
}

// TestSSEOverlongMessageDropped: a message event larger than
// WithMaxLineBytes is dropped unread; the request it answered times
// out, and the connection lives on.
func TestSSEOverlongMessageDropped(t *testing.T) {
	srv := &httpserver.SSE{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, err := ConnectHTTP(t.Context(), hs.URL+"/sse", WithMaxLineBytes(4096))
	require.NoError(t, err)
	defer closeAndWait(t, c)
	_, err = c.CallTool(t.Context(), "echo", map[string]any{"text": strings.Repeat("x", 8192)}, Timeout(500*time.Millisecond))
	require.ErrorIs(t, err, ErrTimeout)
	res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "small"})
	require.NoError(t, err, "the connection lives on")
	assert.Equal(t, "small", res.Text())
}
