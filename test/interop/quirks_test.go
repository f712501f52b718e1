package interop_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/test/testutil"
)

// What the real servers do that the specification does not lead one to
// expect, each kept as a test so that a change in a server shows here.

// mcp-go (v1.2.1) by default issues session IDs but checks only their
// form (StatelessGeneratingSessionIdManager): a server restarted knows
// nothing of the session, yet takes its ID, where the specification has
// it answer 404. A legacy client whose GET stream survives the restart
// calls on without noticing, and no supervisor restarts it; session-scoped
// state (log level, resource subscriptions) is silently gone. -stateful
// (server.WithStateful) answers an unknown session 404, which the matrix
// relies on.
func TestMCPGoDefaultSessionsOutliveARestart(t *testing.T) {
	srv := startServer(t, "/mcp", peerPath(t, "bin/mcpgo-server"), "-http", "ADDR")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rec := &sessionRecorder{base: http.DefaultTransport.(*http.Transport).Clone()}
	defer rec.base.CloseIdleConnections()
	opts := append(clientOptions(snodo.EraLegacy, newAnswers()), snodo.WithHTTPClient(&http.Client{Transport: rec}))
	c, err := snodo.ConnectHTTP(ctx, srv.url, opts...)
	require.NoError(t, err)
	require.Equal(t, snodo.EraLegacy, c.Era())
	sid := rec.session()
	require.NotEmpty(t, sid, "a session was issued")
	_ = c.Close()
	<-c.Done()

	srv.restart(t)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", c.ProtocolVersion())
	resp, err := rec.base.RoundTrip(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the new process takes a session it never issued: %s", body)
	assert.Contains(t, string(body), `"greet"`)
}

// sessionRecorder keeps the last Mcp-Session-Id a server issued.
type sessionRecorder struct {
	base *http.Transport
	mu   sync.Mutex
	sid  string
}

func (r *sessionRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err == nil && resp.Header.Get("Mcp-Session-Id") != "" {
		r.mu.Lock()
		r.sid = resp.Header.Get("Mcp-Session-Id")
		r.mu.Unlock()
	}
	return resp, err
}

func (r *sessionRecorder) session() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sid
}

// mcp-go (v1.2.1) can lose a notification its handler sends just before
// returning: the goroutine that forwards the session's notifications to
// the response has taken it off the queue when the request's end (under
// the same lock) closes the response, and it then drops it. So a call's
// last progress updates may never reach the wire. With a legacy session
// there is a second taker of that queue, the GET stream: an update may
// go there instead of the call's own stream, and arrive after the result
// (too late for the call; snodo drops it, its token done). snodo
// delivers every update that arrives in time: in the modern era as many
// OnProgress calls as notifications/progress lines received.
func TestMCPGoProgressOnTheWire(t *testing.T) {
	for _, era := range []snodo.Era{snodo.EraModern, snodo.EraLegacy} {
		t.Run(string(era), func(t *testing.T) {
			srv := startServer(t, "/mcp", peerPath(t, "bin/mcpgo-server"), "-http", "ADDR", "-stateful")
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var onWire atomic.Int32
			opts := append(clientOptions(era, newAnswers()), snodo.WithWireTrace(func(dir connection.Direction, line []byte) {
				if dir == connection.Received && bytes.Contains(line, []byte(`"notifications/progress"`)) {
					onWire.Add(1)
				}
			}))
			c, err := snodo.ConnectHTTP(ctx, srv.url, opts...)
			require.NoError(t, err)
			defer closeAndWait(t, c)
			const steps, calls = 20, 10
			lost := 0
			for range calls {
				onWire.Store(0)
				var delivered atomic.Int32
				res, err := c.CallTool(ctx, "count", map[string]any{"steps": steps},
					snodo.OnProgress(func(snodo.Progress) { delivered.Add(1) }))
				require.NoError(t, err)
				require.Equal(t, "counted 20", res.Text())
				if era == snodo.EraModern {
					assert.Equal(t, onWire.Load(), delivered.Load(), "every update received is delivered")
					assert.GreaterOrEqual(t, delivered.Load(), int32(steps-1), "at most the one in the forwarder's hand is lost")
				}
				assert.LessOrEqual(t, delivered.Load(), int32(steps))
				lost += steps - int(delivered.Load())
			}
			t.Logf("%d of mcp-go's %d progress updates did not reach their call", lost, steps*calls)
		})
	}
}

// mcp-go (v1.2.1) over stdio writes a call's notifications through a
// queue another goroutine drains, and its result directly: the result
// usually overtakes the progress updates, which then arrive for a call
// that is over (snodo drops them, their token done). snodo delivers the
// updates that come before the result, all of them.
func TestMCPGoStdioProgressAfterTheResult(t *testing.T) {
	for _, era := range []snodo.Era{snodo.EraModern, snodo.EraLegacy} {
		t.Run(string(era), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var mu sync.Mutex
			var lines []string // what came, in order: "progress" or "result"
			opts := append(clientOptions(era, newAnswers()), snodo.WithShutdownGrace(10*time.Second),
				snodo.WithWireTrace(func(dir connection.Direction, line []byte) {
					mu.Lock()
					defer mu.Unlock()
					switch {
					case dir != connection.Received:
					case bytes.Contains(line, []byte(`"notifications/progress"`)):
						lines = append(lines, "progress")
					case bytes.Contains(line, []byte(`"counted 5"`)):
						lines = append(lines, "result")
					}
				}))
			c, err := snodo.Connect(ctx, peerPath(t, "bin/mcpgo-server"), []string{"-stdio"}, opts...)
			require.NoError(t, err)
			defer closeAndWait(t, c)
			var delivered atomic.Int32
			res, err := c.CallTool(ctx, "count", map[string]any{"steps": 5}, snodo.OnProgress(func(snodo.Progress) { delivered.Add(1) }))
			require.NoError(t, err)
			require.Equal(t, "counted 5", res.Text())
			var before int
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				before = slices.Index(lines, "result")
				return len(lines) == 6
			}, 20*time.Second, 10*time.Millisecond, "all five updates are written, before or after the result")
			assert.Equal(t, int32(before), delivered.Load(), "the updates before the result are delivered")
			t.Logf("%d of 5 progress updates came after the result", 5-before)
		})
	}
}

// mcp-go (v1.2.1) over stdio sends the events of a subscriptions/listen
// stream without the io.modelcontextprotocol/subscriptionId their _meta
// must carry (over HTTP they carry it). snodo cannot tell which
// subscription an event belongs to: it drops it, with one warning per
// connection, and the subscription hears nothing.
func TestMCPGoStdioListenEventsCarryNoSubscriptionID(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var logs testutil.LogRecorder
	var untagged atomic.Int32
	var lent connopts.Lent // its Flush
	c, err := snodo.Connect(ctx, peerPath(t, "bin/mcpgo-server"), []string{"-stdio"},
		append(clientOptions(snodo.EraModern, newAnswers()), snodo.WithShutdownGrace(10*time.Second), snodo.WithLogger(logs.Logger()),
			connopts.Lend[snodo.Option](&lent),
			snodo.WithWireTrace(func(dir connection.Direction, line []byte) {
				if dir == connection.Received && bytes.Contains(line, []byte(`"notifications/tools/list_changed"`)) &&
					!bytes.Contains(line, []byte("subscriptionId")) {
					untagged.Add(1)
				}
			}))...)
	require.NoError(t, err)
	defer closeAndWait(t, c)
	require.Equal(t, snodo.EraModern, c.Era())
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	assert.True(t, sub.Acknowledged().ToolsListChanged)
	for range 2 {
		_, err = c.CallTool(ctx, "add_tool", nil)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return untagged.Load() == 2 }, 20*time.Second, 10*time.Millisecond,
		"two list_changed events without a subscriptionId")
	require.NoError(t, lent.Flush(ctx))
	assert.Equal(t, 1, logs.Count("without the io.modelcontextprotocol/subscriptionId"), "one warning per connection")
	select {
	case ev := <-sub.Events():
		t.Errorf("the subscription got %s", ev.Method)
	default:
	}
}
