package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/test/testutil"
)

func TestProgressRunsInOrderBeforeTheResult(t *testing.T) {
	c := start(t, Config{})
	var got []Progress
	res, err := c.Request(context.Background(), "test/progress", map[string]any{"count": 20, "intervalMs": 0, "message": "m"},
		&CallOptions{OnProgress: func(p Progress) { got = append(got, p) }})
	require.NoError(t, err)
	assert.JSONEq(t, `{"done":20}`, string(res))
	require.Len(t, got, 20)
	for i, p := range got {
		assert.Equal(t, float64(i+1), p.Progress)
		assert.Equal(t, float64(20), p.Total)
		assert.Equal(t, "m", p.Message)
	}
}

func TestProgressTokenMergesWithCallerMeta(t *testing.T) {
	c := start(t, Config{})
	params := json.RawMessage(`{"count":1,"_meta":{"mine":"kept"}}`)
	var n int
	_, err := c.Request(context.Background(), "test/progress", params, &CallOptions{OnProgress: func(Progress) { n++ }})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	res := mustCall(t, c, "test/requests", map[string]string{"method": "test/progress"})
	assert.Contains(t, string(res), `"mine":"kept"`)
	assert.Contains(t, string(res), `"progressToken":1`)
}

// The server paces its progress on the client's notifications
// (stepMethod) rather than on its own clock: each gap between two updates
// is a tenth of the timeout plus a round trip, whatever the load, while
// the whole request runs for twice the timeout.
func TestResetTimeoutOnProgress(t *testing.T) {
	c := start(t, Config{})
	const timeout = 600 * time.Millisecond // each gap leaves 540 ms of slack
	run := func(step string, opts CallOptions, until time.Duration) error {
		var wg sync.WaitGroup
		defer wg.Wait()
		began := time.Now()
		opts.Timeout = timeout
		opts.OnProgress = func(Progress) {
			done := time.Since(began) > until
			wg.Add(1)
			go func() { // the next step, a tenth of the timeout later
				defer wg.Done()
				time.Sleep(timeout / 10)
				_ = c.Notify(context.Background(), step, map[string]bool{"done": done})
			}()
		}
		_, err := c.Request(context.Background(), "test/progress", map[string]any{"count": 1000, "stepMethod": step, "honorCancel": true}, &opts)
		return err
	}
	err := run("test/step/reset", CallOptions{ResetTimeoutOnProgress: true}, 2*timeout)
	require.NoError(t, err, "twice the timeout of work, with progress every tenth of it, outlives the timeout")

	err = run("test/step/plain", CallOptions{}, 2*timeout)
	assert.ErrorIs(t, err, jsonrpc.ErrTimeout, "without the reset the timeout holds")

	err = run("test/step/capped", CallOptions{ResetTimeoutOnProgress: true, MaxTotalTimeout: timeout * 3 / 2}, 2*timeout)
	assert.ErrorIs(t, err, jsonrpc.ErrTimeout, "the total cap holds whatever the progress")
}

func TestProgressPanicCancelsOnServerAndRepanics(t *testing.T) {
	c := start(t, Config{})
	var sent int64
	func() {
		defer func() {
			assert.Equal(t, "boom", recover())
		}()
		c.Request(context.Background(), "test/progress", map[string]any{"count": 5, "intervalMs": 100}, //nolint:errcheck
			&CallOptions{Sent: func(id int64) { sent = id }, OnProgress: func(Progress) { panic("boom") }})
		t.Fatal("Request returned instead of panicking")
	}()
	assert.Equal(t, []int64{sent}, receivedCancels(t, c, 1))
	assert.Equal(t, 0, c.inFlight())
}

func TestOtherNotificationsAreDropped(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := start(t, Config{Logger: logs.Logger()})
	mustCall(t, c, "test/notify", map[string]any{"method": "notifications/message", "params": map[string]any{"level": "info"}})
	mustCall(t, c, "test/progress", json.RawMessage(`{"count":2,"_meta":{"progressToken":999}}`)) // progress nobody asked for
	assert.Equal(t, 1, logs.Count("dropped a server notification method=notifications/message"))
	assert.Equal(t, 2, logs.Count("dropped progress for no request"))
	mustCall(t, c, "test/echo", nil)
}

func TestMetaMergesWithProgressAndCallerMeta(t *testing.T) {
	c := start(t, Config{})
	meta := []byte(`{"era":"modern","mine":"theirs"}`)
	// Spliced: no _meta of the caller's, no progress.
	_, err := c.Request(context.Background(), "test/echo", map[string]int{"a": 1}, &CallOptions{Meta: meta})
	require.NoError(t, err)
	// Merged: the caller's _meta and a progress token, the caller's keys win.
	_, err = c.Request(context.Background(), "test/progress", json.RawMessage(`{"count":1,"_meta":{"mine":"kept"}}`),
		&CallOptions{Meta: meta, OnProgress: func(Progress) {}})
	require.NoError(t, err)
	var seen struct {
		Requests []struct{ Params json.RawMessage } `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, c, "test/requests", map[string]string{"method": "test/echo"}), &seen))
	require.Len(t, seen.Requests, 1)
	assert.JSONEq(t, `{"_meta":{"era":"modern","mine":"theirs"},"a":1}`, string(seen.Requests[0].Params))
	require.NoError(t, json.Unmarshal(mustCall(t, c, "test/requests", map[string]string{"method": "test/progress"}), &seen))
	require.Len(t, seen.Requests, 1)
	assert.JSONEq(t, `{"count":1,"_meta":{"era":"modern","mine":"kept","progressToken":2}}`, string(seen.Requests[0].Params))
}

// A notification is routed by the members that concern the client
// (progressToken on progress, _meta's subscriptionId, requestId on
// cancelled), read by their exact names; any other member, of any type,
// is the notification's own business. Such notifications were dropped
// ("malformed params") because every notification's params were decoded
// into the progress fields, case-insensitively: a "message" object, a
// "Total" string, an "_META" number or params that are an array.
func TestNotificationsReachTheHookWhateverTheirOtherMembers(t *testing.T) {
	type note struct {
		method string
		params string
	}
	got := make(chan note, 16)
	c := start(t, Config{OnNotification: func(_ context.Context, method string, params json.RawMessage) {
		got <- note{method, string(params)}
	}})
	sent := []note{
		{"x/object-message", `{"message":{"text":"hi"}}`},
		{"x/string-total", `{"Total":"all of it","progress":"half"}`},
		{"x/upper-meta", `{"_META":42,"RequestID":{"a":1}}`},
		{"x/array", `[1,2,3]`},
		{"notifications/message", `{"level":"info","data":"still plain","Message":7}`},
	}
	for _, n := range sent {
		mustCall(t, c, "test/notify", map[string]any{"method": n.method, "params": json.RawMessage(n.params)})
	}
	for _, want := range sent {
		select {
		case n := <-got:
			assert.Equal(t, want.method, n.method)
			assert.JSONEq(t, want.params, n.params)
		case <-time.After(5 * time.Second):
			t.Fatalf("notification %s never reached OnNotification", want.method)
		}
	}
}

// Progress queued for a caller whose OnProgress is slow is bounded in
// bytes as well as in updates: past 1 MiB of messages the newest update
// replaces the last queued one, as past 64 updates. A server sending
// progress with long messages made each request keep up to 64 lines'
// worth of them (64 × MaxLineBytes, 1 GiB with the default cap).
func TestProgressQueueIsBoundedInBytes(t *testing.T) {
	const count, size = 64, 256 << 10
	answered := make(chan struct{})
	var once sync.Once
	c := start(t, Config{Trace: func(dir connection.Direction, line []byte) {
		if dir == connection.Received && bytes.Contains(line, []byte(`"done":64`)) {
			once.Do(func() { close(answered) })
		}
	}})
	blocked, release := make(chan struct{}), make(chan struct{})
	var delivered, last int
	returned := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "test/progress", map[string]any{"count": count, "message": strings.Repeat("m", size)},
			&CallOptions{OnProgress: func(p Progress) {
				if delivered == 0 {
					close(blocked)
					<-release
				}
				delivered += len(p.Message)
				last = int(p.Progress)
			}})
		returned <- err
	}()
	<-blocked
	select {
	case <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("the server's answer never came")
	}
	mustCall(t, c, "test/echo", nil) // read after the answer: everything before it is routed
	close(release)
	require.NoError(t, <-returned)
	assert.Equal(t, count, last, "the newest update is kept")
	// What was queued while the caller was busy: at most two queues'
	// worth (the batch the first callback came from, and the rest).
	assert.LessOrEqual(t, delivered, 2*(maxQueuedProgressBytes+size), "%d bytes of messages were queued", delivered)
}
