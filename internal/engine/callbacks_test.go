package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/test/testutil"
)

// An OnNotification hook runs on the reader goroutine: one that panics
// must not end the program. The notification it panicked on is lost
// (logged), the next one arrives, and requests are still answered.
func TestOnNotificationHookThatPanics(t *testing.T) {
	logs := &testutil.LogRecorder{}
	got := make(chan string, 8)
	c := start(t, Config{Logger: logs.Logger(), OnNotification: func(_ context.Context, method string, _ json.RawMessage) {
		if method == "notifications/boom" {
			panic("hook: boom")
		}
		got <- method
	}})
	mustCall(t, c, "test/notify", map[string]any{"method": "notifications/boom"})
	mustCall(t, c, "test/notify", map[string]any{"method": "notifications/after"})
	select {
	case m := <-got:
		assert.Equal(t, "notifications/after", m)
	case <-time.After(10 * time.Second):
		t.Fatal("the notification after the panic never reached the hook")
	}
	assert.JSONEq(t, `{"n":1}`, string(mustCall(t, c, "test/echo", map[string]int{"n": 1})))
	assert.Equal(t, 1, logs.Count("the OnNotification hook panicked; the notification is lost"))
	assert.True(t, logs.Has("method=notifications/boom"))
	assert.True(t, logs.Has("panic=hook: boom"))
	assert.Nil(t, c.Err(), "the connection goes on")
}

// A Stream callback that panics ends its request promptly with a local
// -32603 naming the callback and the panic; the server is sent
// notifications/cancelled for it, the callback is not called again, and
// the connection serves later requests.
func TestStreamCallbackThatPanics(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := start(t, Config{Logger: logs.Logger()})
	var calls atomic.Int32
	ids := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "test/sleep", map[string]any{"ms": 60000, "honorCancel": true}, &CallOptions{
			Sent: func(id int64) { ids <- id },
			moduleCallOptions: moduleCallOptions{Stream: func(string, json.RawMessage) {
				calls.Add(1)
				panic("stream: boom")
			}},
		})
		done <- err
	}()
	id := <-ids
	mustCall(t, c, "test/emit", map[string]any{"method": "notifications/event", "rawSubscriptionId": id, "count": 2})
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the request whose Stream panicked did not end")
	}
	require.ErrorIs(t, err, errStreamPanicked)
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, jsonrpc.CodeInternalError, e.Code)
	assert.Contains(t, err.Error(), "the Stream callback (CallOptions.Stream) panicked on a notifications/event notification: stream: boom")
	assert.Equal(t, []int64{id}, receivedCancels(t, c, 1), "the server is told, as for any request given up")
	assert.Equal(t, int32(1), calls.Load(), "a callback that panicked is not called again")
	assert.JSONEq(t, `{"n":2}`, string(mustCall(t, c, "test/echo", map[string]int{"n": 2})))
	assert.Zero(t, c.inFlight())
	assert.True(t, logs.Has("a request's Stream callback panicked"))
}

// A Stream callback that panics on the server's own notifications/cancelled
// for its request (a stream the server tears down) ends the request with
// the panic rather than the teardown, and nothing is sent back.
func TestStreamCallbackThatPanicsOnTheServersCancel(t *testing.T) {
	c := start(t, Config{}, "-eof-grace", "100ms")
	ids := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "test/sleep", map[string]any{"ms": 60000}, &CallOptions{
			Sent:              func(id int64) { ids <- id },
			moduleCallOptions: moduleCallOptions{Stream: func(string, json.RawMessage) { panic("stream: boom") }},
		})
		done <- err
	}()
	id := <-ids
	mustCall(t, c, "test/notify", map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": id}})
	select {
	case err := <-done:
		require.ErrorIs(t, err, errStreamPanicked)
		assert.Contains(t, err.Error(), "panicked on a notifications/cancelled notification: stream: boom")
	case <-time.After(10 * time.Second):
		t.Fatal("the request whose Stream panicked did not end")
	}
	assert.Empty(t, testutil.CancelledIDs(t, mustCall(t, c, "test/received", map[string]string{"method": "notifications/cancelled"})))
	assert.Zero(t, c.inFlight())
}

// The recover around the reader's callbacks costs no allocation while
// nothing panics.
func TestCallbackGuardsDoNotAllocate(t *testing.T) {
	h := newRouteHarness(t)
	h.c.cfg.OnNotification = func(context.Context, string, json.RawMessage) {}
	params := json.RawMessage(`{}`)
	sink := func(string, json.RawMessage) {}
	assert.Zero(t, testing.AllocsPerRun(100, func() { h.c.toHook("notifications/x", params) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if h.c.toStream(sink, 7, "notifications/x", params) != nil {
			t.Fatal("no panic, no error")
		}
	}))
}
