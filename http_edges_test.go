package snodo

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/httpserver"
)

// recorder is another origin: it keeps the headers of every request it
// gets and answers a POSTed request with a tool result "elsewhere".
type recorder struct {
	srv     *httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(req.Body)
		if json.Unmarshal(body, &m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"elsewhere"}]}}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) seen() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// TestHTTPRedirectToAnotherOriginCarriesNoCredential: a tools/call POST
// of a legacy session, with a user header and a static Authorization,
// redirected by each status to another port of the same host (another
// origin), with the connection's own client and with one the caller
// gave: 307 and 308 reach the other origin without the session, the
// protocol version, the user's headers or the Authorization; 301 and
// 302, which would turn the POST into a GET, fail naming the URL.
func TestHTTPRedirectToAnotherOriginCarriesNoCredential(t *testing.T) {
	for _, own := range []bool{true, false} {
		for _, code := range []int{301, 302, 307, 308} {
			name := http.StatusText(code)
			if !own {
				name += " WithHTTPClient"
			}
			t.Run(name, func(t *testing.T) {
				other := newRecorder(t)
				srv := &httpserver.HTTP{Era: "legacy", Misbehave: "redirect-away", RedirectTo: other.srv.URL + "/mcp", RedirectCode: code}
				opts := []Option{WithTimeout(5 * time.Second), WithHTTPHeader("X-Api-Key", "user-key"), WithHTTPHeader("Authorization", "Bearer static-secret")}
				var theirs atomic.Int32
				if !own {
					opts = append(opts, WithHTTPClient(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
						theirs.Add(1)
						return nil
					}}))
				}
				c, _ := dialHTTPTest(t, srv, opts...)
				res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
				if code == 301 || code == 302 {
					require.Error(t, err)
					assert.ErrorContains(t, err, "would resend it as a GET")
					assert.ErrorContains(t, err, other.srv.URL+"/mcp", "names the URL")
					assert.Empty(t, other.seen(), "nothing reached the other origin")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, "elsewhere", res.Text())
				seen := other.seen()
				require.Len(t, seen, 1)
				for _, h := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "X-Api-Key", "Authorization", "Referer", "Cookie"} {
					assert.Empty(t, seen[0].Get(h), "%s reached another origin", h)
				}
				assert.Equal(t, "application/json", seen[0].Get("Content-Type"), "the framing goes with the body")
				assert.Empty(t, seen[0].Get("Mcp-Method"), "a legacy request has no modern header mirrors")
				if !own {
					assert.Equal(t, int32(1), theirs.Load(), "the caller's CheckRedirect runs too")
				}
			})
		}
	}
}

// A redirect within the origin keeps every header: the session and the
// user's key still arrive.
func TestHTTPRedirectWithinTheOriginKeepsHeaders(t *testing.T) {
	var keys []string
	var mu sync.Mutex
	inner := &httpserver.HTTP{Era: "legacy"}
	mux := http.NewServeMux()
	mux.Handle("/v2/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key")+"|"+r.Header.Get("Mcp-Session-Id"))
		mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	mux.Handle("/mcp", http.RedirectHandler("/v2/mcp", http.StatusPermanentRedirect))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	c, err := ConnectHTTP(t.Context(), hs.URL+"/mcp", WithHTTPHeader("X-Api-Key", "user-key"))
	require.NoError(t, err)
	defer func() { _ = c.Close(); <-c.Done() }()
	_, err = c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, keys)
	last := keys[len(keys)-1]
	assert.True(t, strings.HasPrefix(last, "user-key|") && len(last) > len("user-key|"), "the call kept its key and session: %q", last)
}

// The listen stream backs off from a floor whatever the server says: a
// "retry: 0" then 503s, counted. The waits are 250 ms, 500 ms, 1 s: four
// GETs take at least 1.75 s (asserted with a margin); without the floor
// they took microseconds.
func TestHTTPListenStreamBacksOffFromAFloor(t *testing.T) {
	srv := &httpserver.HTTP{Era: "legacy", Misbehave: "listen-retry-0"}
	start := time.Now()
	dialHTTPTest(t, srv)
	require.Eventually(t, func() bool { return srv.Gets() >= 4 }, 30*time.Second, 10*time.Millisecond)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 1200*time.Millisecond, "4 GETs in %s: a hot loop", took)
	t.Logf("4 listen GETs in %s", took)
}

// A server that ends each listen stream after one event with "retry: 1"
// gets at most four reconnects a second (the floor is 250 ms), counted.
func TestHTTPListenStreamReconnectsAtMostFourTimesASecond(t *testing.T) {
	srv := &httpserver.HTTP{Era: "legacy", Misbehave: "listen-event-retry-1"}
	start := time.Now()
	dialHTTPTest(t, srv)
	require.Eventually(t, func() bool { return srv.Gets() >= 6 }, 30*time.Second, 10*time.Millisecond)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 1100*time.Millisecond, "6 GETs in %s: more than 4 a second", took)
	t.Logf("6 listen GETs in %s", took)
}

// A retry too large for a millisecond duration is the 30 s ceiling, not
// a wrapped negative wait: within a one-second call, no resumption GET.
func TestHTTPRetryOverflowIsClamped(t *testing.T) {
	srv := &httpserver.HTTP{Era: "legacy", Misbehave: "resume-overflow"}
	c, _ := dialHTTPTest(t, srv, WithTimeout(time.Second))
	_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.ErrorIs(t, err, ErrTimeout)
	assert.Zero(t, srv.Resumes(), "resumption GETs within the call")
}

// A data line that never ends fails its call with ErrMessageTooLarge as
// it passes the limit, without reading on to its end (1 GiB).
func TestHTTPEndlessLineFailsAsItPassesTheLimit(t *testing.T) {
	srv := &httpserver.HTTP{Era: "modern", Misbehave: "endless-line"}
	c, _ := dialHTTPTest(t, srv, WithTimeout(20*time.Second), WithMaxLineBytes(32<<10))
	start := time.Now()
	_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.ErrorIs(t, err, ErrMessageTooLarge)
	assert.Less(t, time.Since(start), 10*time.Second)
	_, err = c.ListTools(t.Context())
	require.NoError(t, err, "the connection lives on")
	assert.Less(t, srv.Written(), int64(256<<20), "the client read on: %d bytes written", srv.Written())
	t.Logf("the server wrote %d bytes before the client stopped reading", srv.Written())
}

// A 503 with a Retry-After too long to wait for fails at once, saying
// so: one POST, and no claim of retries.
func TestHTTPRetryAfterTooLongSaysWhatHappened(t *testing.T) {
	srv := &httpserver.HTTP{Era: "modern", Misbehave: "retry-after-long"}
	c, _ := dialHTTPTest(t, srv, WithTimeout(5*time.Second))
	_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.Error(t, err)
	assert.ErrorContains(t, err, "Retry-After asks for 1h0m0s")
	assert.NotContains(t, err.Error(), "still so after")
	assert.Equal(t, int64(1), srv.Calls())
}

// What a server writes into an error status reaches the error escaped:
// no ESC, BEL, CR, LF, C1 or invalid UTF-8 is left raw.
func TestHTTPServerTextInErrorsIsSanitised(t *testing.T) {
	srv := &httpserver.HTTP{Era: "modern", Misbehave: "escapes"}
	c, _ := dialHTTPTest(t, srv, WithTimeout(5*time.Second))
	_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.Error(t, err)
	msg := err.Error()
	assert.True(t, utf8.ValidString(msg), "invalid UTF-8 in %q", msg)
	for _, raw := range []string{"\x1b", "\x07", "\r", "\n", "\u009b"} {
		assert.NotContains(t, msg, raw)
	}
	assert.Contains(t, msg, `boom\x1b[2J`, "the text is shown escaped")
	var se *connection.HTTPStatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 502, se.StatusCode)
	assert.NotContains(t, se.Status, "\x1b")
}

// A POST answered with a web page, with an old HTTP+SSE server's
// endpoint event, or with a bare 202 fails at once, naming what came; the
// endpoint event's stream would otherwise hold the call to its timeout.
func TestHTTPNotAnMCPEndpointFailsAtOnce(t *testing.T) {
	for misbehave, want := range map[string]string{
		"html":     "with a web page (text/html)",
		"html-404": "a web page (text/html), not JSON-RPC: a site's or a proxy's error page",
		"old-sse":  "event stream of an old HTTP+SSE server",
		"accepted": "accepted the request (202) without answering it",
	} {
		t.Run(misbehave, func(t *testing.T) {
			hs := httptest.NewServer(&httpserver.HTTP{Era: "modern", Misbehave: misbehave, OnConnect: true})
			defer hs.Close()
			start := time.Now()
			c, err := ConnectHTTP(t.Context(), hs.URL+"/sse", WithTimeout(30*time.Second), WithProbeTimeout(30*time.Second))
			if err == nil {
				_ = c.Close()
				<-c.Done()
				t.Fatal("connected")
			}
			assert.ErrorContains(t, err, want)
			assert.ErrorContains(t, err, "try "+hs.URL+"/mcp", "suggests the same server's /mcp for an /sse URL")
			assert.Less(t, time.Since(start), 10*time.Second, "waited for the timeout")
		})
	}
}

// Session ids the transport forbids are refused at initialize, with a
// clear error, rather than echoed on every request.
func TestHTTPForbiddenSessionIDsAreRefused(t *testing.T) {
	for name, sid := range map[string]string{
		"space":     "abc def",
		"tab":       "abc\tdef",
		"non-ASCII": "séance",
		"folded":    "abc\r\n def",
		"too long":  strings.Repeat("a", 2048),
	} {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(&httpserver.HTTP{Era: "legacy", SessionID: sid})
			defer hs.Close()
			c, err := ConnectHTTP(t.Context(), hs.URL+"/mcp", WithEra(EraLegacy), WithTimeout(5*time.Second))
			if err == nil {
				_ = c.Close()
				<-c.Done()
				t.Fatal("connected")
			}
			assert.ErrorContains(t, err, "Mcp-Session-Id")
			var e *Error
			if assert.ErrorAs(t, err, &e) {
				assert.True(t, e.Local(), "a local error, not the server's: %v", err)
			}
		})
	}
}

// An SSE event id ended by a lone CR is an id and a line end, as the
// SSE standard reads it: the answer after it arrives.
func TestHTTPEventIDWithALoneCR(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			c, _ := dialHTTPTest(t, &httpserver.HTTP{Era: era, Misbehave: "cr-id"}, WithTimeout(5*time.Second))
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
			require.NoError(t, err)
			assert.Equal(t, "hi", res.Text())
		})
	}
}
