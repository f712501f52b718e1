package substream

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

func TestListenSendsFilterAndReturnsAcknowledgedSubset(t *testing.T) {
	c := startConn(t, engine.Config{})
	want := Filter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: []string{"file:///project/config.json"}}
	s := open(t, c, want, Options{})
	require.Positive(t, s.ID())

	// The server honours everything but prompts: the caller sees the gap.
	ack := s.Acknowledged()
	assert.Equal(t, Filter{ToolsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: []string{"file:///project/config.json"}}, ack)
	assert.NotEqual(t, want, ack)

	var reqs struct {
		Requests []struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Notifications Filter `json:"notifications"`
			} `json:"params"`
		} `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(call(t, c, "test/requests", map[string]string{"method": method}), &reqs))
	require.Len(t, reqs.Requests, 1)
	assert.Equal(t, want, reqs.Requests[0].Params.Notifications)
	wire, _ := json.Marshal(s.ID())
	assert.JSONEq(t, string(reqs.Requests[0].ID), string(wire))
}

func TestManySubscriptionsAreDemultiplexedInOrder(t *testing.T) {
	c := startConn(t, engine.Config{})
	subs := make([]*Subscription, 10)
	for i := range subs {
		subs[i] = open(t, c, toolsFilter, Options{})
	}
	// Interleave: round r sends one event to every subscription i < 10-r.
	for r := range 10 {
		for i, s := range subs {
			if i < 10-r {
				emit(t, c, s.ID(), r, 1)
			}
		}
	}
	for i, s := range subs {
		for r := range 10 - i {
			k, id := eventInfo(t, next(t, s))
			assert.Equal(t, s.ID(), id, "subscription %d got another's event", i)
			assert.Equal(t, r, k, "subscription %d: events out of order", i)
		}
		select {
		case ev := <-s.Events():
			t.Errorf("subscription %d got an extra event %s", i, ev.Params)
		default:
		}
	}
}

func TestNotificationsForUnknownSubscriptionsAreDropped(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := startConn(t, engine.Config{Logger: logs.Logger()})
	s := open(t, c, toolsFilter, Options{})
	call(t, c, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "rawSubscriptionId": 9999})
	call(t, c, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "rawSubscriptionId": `"x"`})
	emit(t, c, s.ID(), 7, 1)
	k, _ := eventInfo(t, next(t, s))
	assert.Equal(t, 7, k, "only the event for this subscription arrives")
	assert.True(t, logs.Has("unknown subscription"), "dropped notifications are logged")
}

// The server must not send events before the acknowledgement; if it does,
// they are dropped and logged (driven here on the sink directly: the test
// server always acknowledges first).
func TestEventsBeforeAcknowledgementAreDropped(t *testing.T) {
	logs := &testutil.LogRecorder{}
	opts, err := Options{Logger: logs.Logger()}.withDefaults()
	require.NoError(t, err)
	s := &Subscription{opts: opts, acked: make(chan struct{}), done: make(chan struct{}), events: make(chan Event, 4),
		cancel: func(error) {}}
	s.sink("notifications/tools/list_changed", json.RawMessage(`{"k":1}`))
	s.sink(methodAcknowledged, json.RawMessage(`{"notifications":{"toolsListChanged":true}}`))
	s.sink("notifications/tools/list_changed", json.RawMessage(`{"k":2}`))
	require.Len(t, s.events, 1)
	assert.JSONEq(t, `{"k":2}`, string((<-s.events).Params))
	assert.True(t, logs.Has("before the subscription was acknowledged"))
	assert.Equal(t, toolsFilter, s.Acknowledged())
}

// A caller that makes requests on the goroutine that reads events, with
// events arriving all the while, never deadlocks the connection.
func TestRequestsFromTheReadingGoroutine(t *testing.T) {
	c := startConn(t, engine.Config{})
	s := open(t, c, toolsFilter, Options{})
	emit(t, c, s.ID(), 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 200 {
		ev := <-s.Events()
		k, _ := eventInfo(t, ev)
		require.Equal(t, i, k)
		// Each event triggers a request whose answer comes after the
		// next event (and, every tenth time, a burst of 50 more).
		n := 1
		if i%10 == 0 {
			n = 50
		}
		_, err := c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed",
			"subscription": s.ID(), "params": map[string]any{"k": i + 1}, "count": n}, nil)
		require.NoError(t, err)
		for range n - 1 { // drop the repeats of a burst
			<-s.Events()
		}
	}
}

// A reader that does not read holds up neither responses nor other
// subscriptions; its events wait, in order, within the queue bound.
func TestSlowReaderDoesNotHoldUpResponses(t *testing.T) {
	c := startConn(t, engine.Config{})
	slow := open(t, c, toolsFilter, Options{MaxQueue: 2000})
	other := open(t, c, toolsFilter, Options{})
	emit(t, c, slow.ID(), 0, 1000)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				res, err := c.Request(context.Background(), "test/echo", map[string]int{"g": g, "i": i}, &engine.CallOptions{Timeout: 5 * time.Second})
				if assert.NoError(t, err) {
					assert.JSONEq(t, `{"g":`+itoa(g)+`,"i":`+itoa(i)+`}`, string(res))
				}
			}
		}()
	}
	wg.Wait()
	emit(t, c, other.ID(), 42, 1)
	k, _ := eventInfo(t, next(t, other))
	assert.Equal(t, 42, k)
	require.Len(t, slow.Events(), 1000, "all the slow reader's events wait for it")
	assert.NoError(t, slow.Err())
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// A queue that passes its bound ends the subscription with a clear error
// and cancels it on the server; the events queued before stay readable.
func TestQueueBoundEndsTheSubscription(t *testing.T) {
	c := startConn(t, engine.Config{})
	s := open(t, c, toolsFilter, Options{MaxQueue: 10})
	emit(t, c, s.ID(), 0, 50)
	err := waitEnded(t, s)
	require.ErrorIs(t, err, sentinel.ErrSubscriptionQueueFull)
	assert.Contains(t, err.Error(), "raise the queue bound")
	assert.Len(t, drain(t, s), 10)
	assert.Equal(t, []int64{s.ID()}, cancelledOnServer(t, c, 1))
	assert.Empty(t, openOnServer(t, c))
}

// The queue is bounded in bytes as well as in events: large events to a
// reader that does not keep up end the subscription with snodo.ErrSubscriptionQueueFull
// once limits.MaxQueueBytes (16 MiB) wait, long before 1024 of them do (1024 events
// of up to MaxLineBytes each: 16 GiB with the default line cap). A reader
// that keeps up is never near it.
func TestQueueBytesBoundEndsTheSubscription(t *testing.T) {
	const size, count = 512 << 10, 48 // 24 MiB of events
	c := startConn(t, engine.Config{})
	s := open(t, c, toolsFilter, Options{})
	call(t, c, "test/emit", map[string]any{
		"method": "notifications/tools/list_changed", "subscription": s.ID(),
		"params": map[string]any{"k": 0, "pad": strings.Repeat("p", size)}, "count": count,
	})
	err := waitEnded(t, s)
	require.ErrorIs(t, err, sentinel.ErrSubscriptionQueueFull)
	assert.Contains(t, err.Error(), "bytes")
	var queued int
	evs := drain(t, s)
	for _, ev := range evs {
		queued += len(ev.Params)
	}
	assert.LessOrEqual(t, queued, limits.MaxQueueBytes)
	assert.Greater(t, len(evs), 16)
	t.Logf("%d events, %d bytes queued when the bound ended it", len(evs), queued)
	assert.Equal(t, []int64{s.ID()}, cancelledOnServer(t, c, 1))

	// Small bound, a reader that keeps up: every event arrives.
	s = open(t, c, toolsFilter, Options{MaxQueueBytes: 2 * size})
	for k := range 4 {
		call(t, c, "test/emit", map[string]any{
			"method": "notifications/tools/list_changed", "subscription": s.ID(),
			"params": map[string]any{"k": k, "pad": strings.Repeat("p", size)},
		})
		got, _ := eventInfo(t, next(t, s))
		assert.Equal(t, k, got)
	}
	_, err = Open(context.Background(), c, listenParams(toolsFilter), nil, Options{MaxQueueBytes: -1})
	assert.ErrorContains(t, err, "MaxQueueBytes")
}

// An event whose params have members the connection also reads elsewhere
// (a "message" object, a "total" string: names progress uses) is
// delivered like any other; it was dropped on the reader, with nothing
// but a log record, and the stream went on without it.
func TestEventsWithAnyMembersAreDelivered(t *testing.T) {
	c := startConn(t, engine.Config{})
	s := open(t, c, toolsFilter, Options{})
	for k, params := range []map[string]any{
		{"k": 0, "message": map[string]string{"text": "hi"}},
		{"k": 1, "total": "all", "progress": []int{1}},
		{"k": 2},
	} {
		call(t, c, "test/emit", map[string]any{
			"method": "notifications/tools/list_changed", "subscription": s.ID(), "params": params,
		})
		got, subID := eventInfo(t, next(t, s))
		assert.Equal(t, k, got)
		assert.Equal(t, s.ID(), subID)
	}
}
