package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// noteLog collects delivered notifications.
type noteLog struct {
	mu    sync.Mutex
	notes []*Notification
	ch    chan struct{}
}

func newNoteLog() *noteLog { return &noteLog{ch: make(chan struct{}, 1<<16)} }

func (l *noteLog) handle(_ context.Context, n *Notification) {
	l.mu.Lock()
	l.notes = append(l.notes, n)
	l.mu.Unlock()
	l.ch <- struct{}{}
}

// wait returns the first n notifications delivered.
func (l *noteLog) wait(t *testing.T, n int) []*Notification {
	t.Helper()
	for {
		l.mu.Lock()
		got := len(l.notes)
		l.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-l.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d notifications delivered, want %d", got, n)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Notification(nil), l.notes[:n]...)
}

func notify(t *testing.T, c *Client, method string, params any) {
	t.Helper()
	_, err := c.Request(t.Context(), "test/notify", map[string]any{"method": method, "params": params})
	require.NoError(t, err)
}

// Every kind a server sends outside requests and subscriptions reaches
// the handler, in order; the common ones decode into their types.
func TestNotificationsOfEachKindReachTheHandler(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			l := newNoteLog()
			c := dialTest(t, []string{"-era", era}, WithNotificationHandler(l.handle))
			notify(t, c, methodLogMessage, map[string]any{"level": "warning", "logger": "db", "data": "disk almost full"})
			notify(t, c, methodLogMessage, map[string]any{"level": "info", "data": map[string]int{"rows": 3}})
			notify(t, c, methodElicitationComplete, map[string]any{"elicitationId": "e-1"})
			notify(t, c, "notifications/custom", nil)
			want := []string{methodLogMessage, methodLogMessage, methodElicitationComplete, "notifications/custom"}
			if era == "legacy" {
				notify(t, c, methodToolsListChanged, nil)
				notify(t, c, methodPromptsListChanged, nil)
				notify(t, c, methodResourcesListChanged, nil)
				// Subscribed with a raw request, not Listen: the updates
				// are no subscription's, so the handler has them.
				_, err := c.Request(t.Context(), "resources/subscribe", map[string]string{"uri": "test://a"})
				require.NoError(t, err)
				touch(t, c, "test://a", true)
				_, err = c.Request(t.Context(), "resources/unsubscribe", map[string]string{"uri": "test://a"})
				require.NoError(t, err)
				touch(t, c, "test://a", false)
				want = append(want, methodToolsListChanged, methodPromptsListChanged,
					methodResourcesListChanged, methodResourceUpdated)
			}
			got := l.wait(t, len(want))
			for i, n := range got {
				assert.Equal(t, want[i], n.Method, "delivered in the order sent")
			}
			var m LogMessage
			require.NoError(t, json.Unmarshal(got[0].Params, &m))
			assert.Equal(t, LoggingLevel("warning"), m.Level)
			assert.Equal(t, "db", m.Logger)
			assert.Equal(t, `"disk almost full"`, string(m.Data))
			require.NoError(t, json.Unmarshal(got[1].Params, &m))
			assert.JSONEq(t, `{"rows":3}`, string(m.Data))
			var e ElicitationComplete
			require.NoError(t, json.Unmarshal(got[2].Params, &e))
			assert.Equal(t, "e-1", e.ElicitationID)
			if era == "legacy" {
				var u ResourceUpdated
				require.NoError(t, json.Unmarshal(got[len(got)-1].Params, &u))
				assert.Equal(t, "test://a", u.URI)
			}
		})
	}
}

func touch(t *testing.T, c *Client, uri string, want bool) {
	t.Helper()
	raw, err := c.Request(t.Context(), "test/touch", map[string]string{"uri": uri})
	require.NoError(t, err)
	assert.JSONEq(t, fmt.Sprintf(`{"notified":%t}`, want), string(raw))
}

// In the modern era list_changed and resources/updated belong to a
// subscription: untagged ones are dropped with one warning per
// connection, tagged ones still reach their subscription.
func TestModernUntaggedSubscriptionNotificationsWarnOnce(t *testing.T) {
	logs := &testutil.LogRecorder{}
	l := newNoteLog()
	c := dialTest(t, []string{"-era", "modern"}, WithLogger(logs.Logger()), WithNotificationHandler(l.handle))
	sub, err := c.Listen(t.Context(), Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	for range 3 {
		notify(t, c, methodToolsListChanged, nil)
		notify(t, c, methodResourceUpdated, map[string]string{"uri": "test://a"})
	}
	notify(t, c, methodLogMessage, map[string]any{"level": "info", "data": "after"})
	got := l.wait(t, 1)
	assert.Equal(t, methodLogMessage, got[0].Method, "the untagged ones never reach the handler")
	assert.Equal(t, 1, logs.Count("subscriptionId _meta the protocol requires"), "one warning per connection")

	_, err = c.Request(t.Context(), "test/emit", map[string]any{"method": methodToolsListChanged, "subscription": sub.ID()})
	require.NoError(t, err)
	select {
	case ev := <-sub.Events():
		assert.Equal(t, methodToolsListChanged, ev.Method)
	case <-time.After(10 * time.Second):
		t.Fatal("the tagged notification did not reach its subscription")
	}
}

// A handler that does not return never delays responses; past the
// queue's bound notifications are dropped, counted and logged, and
// delivery resumes in order once the handler catches up.
func TestSlowNotificationHandlerNeverBlocksResponses(t *testing.T) {
	logs := &testutil.LogRecorder{}
	stuck, release := make(chan struct{}), make(chan struct{})
	l := newNoteLog()
	c := dialTest(t, []string{"-era", "legacy"}, WithLogger(logs.Logger()), WithNotificationQueue(10, 1<<20),
		WithNotificationHandler(func(ctx context.Context, n *Notification) {
			if n.Method == "notifications/stuck" {
				close(stuck)
				<-release
			}
			l.handle(ctx, n)
		}))
	notify(t, c, "notifications/stuck", nil)
	<-stuck
	_, err := c.Request(t.Context(), "test/flood", map[string]int{"count": 1000})
	require.NoError(t, err, "the flood's answer arrives while the handler is stuck")
	_, err = c.Request(t.Context(), "test/echo", map[string]int{"x": 1})
	require.NoError(t, err)
	assert.Equal(t, uint64(990), c.notes.droppedCount(), "all but the 10 queued dropped")
	assert.Equal(t, 1, logs.Count("queue is full"), "one warning when dropping starts")
	close(release)
	got := l.wait(t, 11)
	for i, n := range got[1:] {
		assert.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i+1), string(n.Params), "the first 10, in order")
	}
	notify(t, c, methodLogMessage, map[string]any{"level": "info", "data": "resumed"})
	got = l.wait(t, 12)
	assert.Equal(t, methodLogMessage, got[11].Method)
	assert.True(t, logs.Has("caught up"), "the count of dropped notifications logged on resuming")
	assert.True(t, logs.Has("dropped=990"))
}

func TestNotificationHandlerPanicDeliversTheNext(t *testing.T) {
	l := newNoteLog()
	c := dialTest(t, []string{"-era", "legacy"}, WithNotificationHandler(func(ctx context.Context, n *Notification) {
		if n.Method == "notifications/boom" {
			panic("boom")
		}
		l.handle(ctx, n)
	}))
	notify(t, c, "notifications/boom", nil)
	notify(t, c, methodToolsListChanged, nil)
	assert.Equal(t, methodToolsListChanged, l.wait(t, 1)[0].Method)
}

// noteActor forwards what it receives to a channel.
type noteActor struct{ got chan *Notification }

func (a *noteActor) Receive(ctx protoactor.Context) {
	if m, ok := ctx.Message().(*Notification); ok {
		a.got <- m
	}
}

func TestNotificationsToAnActor(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			system := snodoactor.Shared()
			got := make(chan *Notification, 100)
			pid := system.Root.Spawn(protoactor.PropsFromProducer(func() protoactor.Actor { return &noteActor{got: got} }))
			defer system.Root.Stop(pid)
			c := dialTest(t, []string{"-era", era}, WithNotificationHandler(NotificationsTo(system, pid)))
			for i := range 20 {
				notify(t, c, methodLogMessage, map[string]any{"level": "info", "data": i})
			}
			for i := range 20 {
				select {
				case m := <-got:
					var lm LogMessage
					require.NoError(t, json.Unmarshal(m.Params, &lm))
					assert.Equal(t, fmt.Sprint(i), string(lm.Data), "in order")
					assert.Equal(t, methodLogMessage, m.Method)
				case <-time.After(10 * time.Second):
					t.Fatalf("notification %d not delivered to the actor", i)
				}
			}
		})
	}
}

// NotificationsTo with a nil system or PID is refused by Connect, before
// anything starts, instead of a handler that panics on every notification.
func TestNotificationsToNilIsRefused(t *testing.T) {
	command, args := testutil.Server(t)
	system := snodoactor.Shared()
	pid := system.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	defer system.Root.Stop(pid)
	for _, h := range []func(context.Context, *Notification){NotificationsTo(nil, pid), NotificationsTo(system, nil)} {
		_, err := Connect(t.Context(), command, args, WithNotificationHandler(h))
		require.ErrorContains(t, err, "NotificationsTo")
	}
}
