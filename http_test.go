package snodo

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/httpserver"
)

// dialHTTPTest serves the test server's HTTP mode on a local port and
// connects to it; the client is closed, its Done awaited and the server
// stopped when the test ends.
func dialHTTPTest(t *testing.T, srv *httpserver.HTTP, opts ...Option) (*Client, *httptest.Server) {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c, err := ConnectHTTP(t.Context(), hs.URL+"/mcp", opts...) // the test's ctx owns it
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Error("Done not closed 10 s after Close")
		}
	})
	return c, hs
}

func TestHTTPTestServerBothEras(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			srv := &httpserver.HTTP{Era: era}
			c, _ := dialHTTPTest(t, srv)
			assert.Equal(t, era, string(c.Era()))
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
			require.NoError(t, err)
			assert.Equal(t, "hi", res.Text())
			require.NoError(t, c.Close())
			<-c.Done()
			if era == "legacy" {
				assert.Equal(t, int64(1), srv.Deletes(), "Close ends the session with DELETE")
			}
		})
	}
}

// TestHTTPMisbehavingServers: each misbehaviour gets a clear error, holds
// the call no longer than its timeout, and leaves the client usable
// (but for the session's end, which stops it); goleak checks nothing is
// left running.
func TestHTTPMisbehavingServers(t *testing.T) {
	statusCheck := func(code int, text string) func(t *testing.T, err error) {
		return func(t *testing.T, err error) {
			var se *connection.HTTPStatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, code, se.StatusCode)
			assert.ErrorContains(t, err, text)
		}
	}
	type misbehaviour struct {
		misbehave string
		era       string
		check     func(t *testing.T, err error)
		stops     bool          // the client stops with the error
		timeout   time.Duration // default 3 s
	}
	var cases []misbehaviour
	for _, era := range []string{"modern", "legacy"} { // each in both eras
		cases = append(cases,
			misbehaviour{misbehave: "garbage", era: era, check: func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrNotJSONRPC) }},
			misbehaviour{misbehave: "garbage-sse", era: era, check: func(t *testing.T, err error) {
				assert.ErrorContains(t, err, "the stream ended, after 1 event(s) that are no JSON-RPC message, before the response")
				assert.ErrorIs(t, err, ErrStreamBroken)
				assert.ErrorIs(t, err, ErrNotJSONRPC)
			}},
			misbehaviour{misbehave: "never-ending", era: era, check: func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrTimeout) }},
			misbehaviour{misbehave: "5xx", era: era, check: statusCheck(http.StatusInternalServerError, "upstream exploded")},
			misbehaviour{misbehave: "429", era: era, check: func(t *testing.T, err error) { assert.NoError(t, err, "answered after honouring Retry-After") }},
			misbehaviour{misbehave: "redirect-loop", era: era, check: func(t *testing.T, err error) { assert.ErrorContains(t, err, "redirects") }},
			misbehaviour{misbehave: "oversized", era: era, check: func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrMessageTooLarge) }},
		)
	}
	cases = append(cases,
		misbehaviour{misbehave: "429-forever", era: "modern", timeout: 6 * time.Second, check: statusCheck(http.StatusTooManyRequests, "Retry-After")},
		misbehaviour{misbehave: "expire", era: "legacy", stops: true, check: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, ErrSessionExpired)
			assert.ErrorIs(t, err, ErrConnectionClosed)
		}},
	)
	for _, tc := range cases {
		t.Run(tc.misbehave+"-"+tc.era, func(t *testing.T) {
			timeout := cmp.Or(tc.timeout, 3*time.Second)
			srv := &httpserver.HTTP{Era: tc.era, Misbehave: tc.misbehave, MaxEvent: 64 << 10}
			c, _ := dialHTTPTest(t, srv, WithTimeout(timeout), WithMaxLineBytes(32<<10))
			start := time.Now()
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
			took := time.Since(start)
			if tc.misbehave == "429" {
				require.NoError(t, err)
				assert.Equal(t, "hi", res.Text())
			}
			tc.check(t, err)
			assert.Less(t, took, timeout+5*time.Second, "held past its timeout")
			if err != nil && !errors.Is(err, ErrTimeout) {
				assert.True(t, err.(*Error).Local(), "an HTTP failure is a local error: %v", err)
			}
			if tc.stops {
				select {
				case <-c.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("the client did not stop")
				}
				assert.ErrorIs(t, c.Err(), ErrSessionExpired)
				return
			}
			_, err = c.ListTools(t.Context())
			assert.NoError(t, err, "the connection lives on")
			if tc.misbehave == "never-ending" {
				require.Eventually(t, func() bool { return srv.Aborted() == 1 }, 5*time.Second, 10*time.Millisecond,
					"the timed-out call's stream is closed")
			}
		})
	}
}

// A server that misbehaves from its first answer (server/discover,
// initialize) fails ConnectHTTP with a clear error, within the probe's
// timeout and then initialize's, and leaves nothing running (goleak).
func TestHTTPMisbehavingServerAtConnect(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		for misbehave, want := range map[string]string{
			"garbage":       "not a JSON-RPC message",
			"garbage-sse":   "after 1 event(s) that are no JSON-RPC message",
			"never-ending":  "no answer within 3s",
			"5xx":           "upstream exploded",
			"redirect-loop": "redirects",
			"oversized":     "larger than 32768 bytes",
		} {
			t.Run(misbehave+"-"+era, func(t *testing.T) {
				hs := httptest.NewServer(&httpserver.HTTP{Era: era, Misbehave: misbehave, OnConnect: true, MaxEvent: 64 << 10})
				defer hs.Close()
				const timeout = 3 * time.Second
				start := time.Now()
				c, err := ConnectHTTP(t.Context(), hs.URL+"/mcp", WithTimeout(timeout), WithProbeTimeout(timeout), WithMaxLineBytes(32<<10))
				took := time.Since(start)
				if err == nil {
					_ = c.Close()
					<-c.Done()
					t.Fatal("connected")
				}
				assert.ErrorContains(t, err, want)
				assert.Less(t, took, 2*timeout+5*time.Second, "held past its timeouts")
			})
		}
	}
}

func TestHTTPUnreachable(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := ConnectHTTP(ctx, url)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrServerUnreachable)
}

// Close leaves no connection open: the legacy session is deleted, every
// exchange is over, and the default client's idle connections are closed
// (the server sees each connection it accepted closed).
func TestHTTPCloseLeavesNoConnection(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			var mu sync.Mutex
			open := map[net.Conn]bool{}
			hs := httptest.NewUnstartedServer(&httpserver.HTTP{Era: era})
			hs.Config.ConnState = func(conn net.Conn, state http.ConnState) {
				mu.Lock()
				defer mu.Unlock()
				switch state {
				case http.StateNew:
					open[conn] = true
				case http.StateClosed, http.StateHijacked:
					delete(open, conn)
				}
			}
			hs.Start()
			defer hs.Close()
			c, err := ConnectHTTP(t.Context(), hs.URL+"/mcp")
			require.NoError(t, err)
			_, err = c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
			require.NoError(t, err)
			require.NoError(t, c.Close())
			<-c.Done()
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(open) == 0
			}, 5*time.Second, 10*time.Millisecond, "a connection is left open after Close")
		})
	}
}

// A server that forgets the session (it restarted) gets a new one: the
// call that met the 404, or a 400 naming the session, is sent again on
// the new session and succeeds, and the client lives on, plain or
// supervised alike (test/http_test.go in supervisor). One new session,
// nothing else.
func TestHTTPSessionRenewedWhenTheServerForgetsIt(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusBadRequest} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := &httpserver.HTTP{Era: "legacy", ForgottenStatus: status}
			c, _ := dialHTTPTest(t, srv)
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "before"})
			require.NoError(t, err)
			assert.Equal(t, "before", res.Text())
			require.EqualValues(t, 1, srv.Sessions())
			for i := range 3 {
				srv.Expire()
				res, err = c.CallTool(t.Context(), "echo", map[string]any{"text": "after"})
				require.NoError(t, err, "the call is sent again on a new session")
				assert.Equal(t, "after", res.Text())
				assert.EqualValues(t, 2+i, srv.Sessions(), "one new session per expiry")
			}
			assert.NoError(t, c.Err(), "the client lives on")
		})
	}
}

// TestHTTPGivingUpOnASilentServer: a call whose server never answers
// (not even a status line) returns as soon as its timeout passes or its
// ctx is cancelled, in both eras, and the server learns it: the
// request's stream is closed, which is a modern request's cancellation
// (nothing is posted), while a legacy session also gets
// notifications/cancelled. The connection lives on.
func TestHTTPGivingUpOnASilentServer(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		for _, how := range []string{"timeout", "cancel"} {
			t.Run(era+"/"+how, func(t *testing.T) {
				srv := &httpserver.HTTP{Era: era, Misbehave: "silent"}
				c, _ := dialHTTPTest(t, srv)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var opts []RequestOption
				if how == "timeout" {
					opts = append(opts, Timeout(200*time.Millisecond))
				} else {
					go func() {
						// Cancelled once the server holds the request.
						for srv.Calls() == 0 && ctx.Err() == nil {
							time.Sleep(time.Millisecond)
						}
						cancel()
					}()
				}
				start := time.Now()
				_, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"}, opts...)
				took := time.Since(start)
				if how == "timeout" {
					require.ErrorIs(t, err, ErrTimeout)
				} else {
					require.ErrorIs(t, err, context.Canceled)
				}
				assert.Less(t, took, 5*time.Second, "held after it gave up")
				require.Eventually(t, func() bool { return srv.Aborted() == 1 }, 5*time.Second, time.Millisecond,
					"the request's stream is closed")
				if era == "legacy" {
					require.Eventually(t, func() bool { return srv.Cancels() == 1 }, 5*time.Second, time.Millisecond,
						"the legacy server is told")
				}
				_, err = c.ListTools(t.Context())
				require.NoError(t, err, "the connection lives on")
				if era == "modern" {
					assert.Zero(t, srv.Cancels(), "nothing is posted to cancel a modern request")
				}
			})
		}
	}
}
