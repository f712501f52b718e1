package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

func nextEvent(t *testing.T, sub *snodo.Subscription) snodo.Event {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		require.True(t, ok, "events closed early: %v", sub.Err())
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return snodo.Event{}
}

func TestSubscriptionComesBackAfterARestart(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option())
	require.NoError(t, err)
	defer c.Close()
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)

	emit := func() {
		_, err := c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
		require.NoError(t, err)
	}
	emit()
	assert.Equal(t, "notifications/tools/list_changed", nextEvent(t, sub).Method)

	kill(t, c.serverPID())
	marker := nextEvent(t, sub)
	assert.Equal(t, ResubscribedMethod, marker.Method)
	var params struct {
		Resubscriptions int    `json:"resubscriptions"`
		Reason          string `json:"reason"`
		ID              int64  `json:"subscriptionId"`
	}
	require.NoError(t, json.Unmarshal(marker.Params, &params))
	assert.Equal(t, 1, params.Resubscriptions)
	assert.Contains(t, params.Reason, "killed by signal")
	assert.Equal(t, sub.ID(), params.ID)
	assert.Equal(t, 1, supervisedOf(sub).Resubscriptions())
	assert.Equal(t, snodo.Filter{ToolsListChanged: true}, sub.Acknowledged())

	// The new server knows the subscription: its events arrive.
	raw, err := c.Request(t.Context(), "test/subscriptions", nil)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "open")
	emit()
	assert.Equal(t, "notifications/tools/list_changed", nextEvent(t, sub).Method)

	require.NoError(t, sub.Close())
	assert.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionClosed)
	_, open := <-sub.Events()
	assert.False(t, open)
}

// The queue options reach the supervised subscription's server
// subscriptions: MaxQueued bounds it as it bounds a direct one.
func TestSubscriptionMaxQueuedBytes(t *testing.T) {
	const size, bound = 32 << 10, 100 << 10
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	defer c.Close()
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true}, snodo.MaxQueued(0, bound))
	require.NoError(t, err)
	_, err = c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed",
		"params": map[string]any{"pad": strings.Repeat("p", size)}, "count": 16})
	require.NoError(t, err)
	// The server's subscription ends; the supervised one once its reader
	// has taken the events queued before the end.
	testutil.Receive(t, supervisedOf(sub).current().Done(), 10*time.Second, "the server subscription's end (the byte bound)")
	n := 0
	for range sub.Events() {
		n++
	}
	assert.LessOrEqual(t, n, 4, "3 events of 32 KiB fit in 100 KiB, and one waits in the forwarder")
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionQueueFull)
	assert.Contains(t, sub.Err().Error(), fmt.Sprintf("bound %d bytes", bound))
	_, err = c.Listen(t.Context(), snodo.Filter{}, snodo.MaxQueued(0, -1))
	assert.ErrorContains(t, err, "MaxQueued")
}

func TestSubscriptionEndsWithSupervision(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	select {
	case <-sub.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription outlived its supervisor")
	}
	// Close's reason, not the owner exit the connection would see once
	// the supervisor is gone.
	assert.ErrorIs(t, sub.Err(), snodo.ErrConnectionClosed)
	assert.ErrorIs(t, sub.Err(), snodo.ErrClosed)
	assert.NotErrorIs(t, sub.Err(), snodo.ErrOwnerExited)
	assert.Zero(t, supervisedOf(sub).Resubscriptions())
}

// A ListenTo actor gets the events as messages across a restart, the
// marker between them, then one end.
func TestSubscriptionListenToAcrossARestart(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	defer c.Close()
	got := make(chan any, 16)
	sys := snodoactor.Shared()
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *snodo.SubscriptionEvent, *snodo.SubscriptionEnded:
			got <- msg
		}
	}))
	defer sys.Root.Stop(pid)
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(pid))
	require.NoError(t, err)
	next := func() any {
		t.Helper()
		return testutil.Receive(t, got, 5*time.Second, "a message")
	}
	emit := func() {
		_, err := c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
		require.NoError(t, err)
	}
	emit()
	assert.Equal(t, "notifications/tools/list_changed", next().(*snodo.SubscriptionEvent).Method)
	kill(t, c.serverPID())
	assert.Equal(t, ResubscribedMethod, next().(*snodo.SubscriptionEvent).Method)
	emit()
	ev := next().(*snodo.SubscriptionEvent)
	assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	assert.Same(t, sub, ev.Subscription, "the message names the subscription Listen returned")
	assert.Same(t, c, supervisedOf(sub).Member())

	require.NoError(t, c.Close())
	end := next().(*snodo.SubscriptionEnded)
	assert.ErrorIs(t, end.Err, snodo.ErrClosed)
	assert.ErrorIs(t, sub.Err(), snodo.ErrClosed)
}

// The subscription watches its ListenTo actor: when it stops, the
// subscription ends with ErrOwnerExited.
func TestSubscriptionEndsWithItsListenToActor(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	defer c.Close()
	sys := snodoactor.Shared()
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(pid))
	require.NoError(t, err)
	sys.Root.Stop(pid)
	select {
	case <-sub.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription outlived its actor")
	}
	assert.ErrorIs(t, sub.Err(), snodo.ErrOwnerExited)
}

// A pool's subscription ends with a -32000 wrapping ErrClosed when the
// pool is closed (never the owner exit its connection would see once
// the member is gone), every time.
func TestPoolSubscriptionEndsWithClosed(t *testing.T) {
	cmd, args := testutil.Server(t)
	for i := range 5 {
		p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
		require.NoError(t, err)
		sub, err := p.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
		require.NoError(t, err)
		assert.Contains(t, p.Members(), supervisedOf(sub).Member(), "the member holding it is named")
		require.NoError(t, p.Close())
		select {
		case <-sub.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("subscription outlived its pool")
		}
		require.ErrorIs(t, sub.Err(), snodo.ErrConnectionClosed, "run %d", i)
		require.ErrorIs(t, sub.Err(), snodo.ErrClosed, "run %d", i)
		require.NotErrorIs(t, sub.Err(), snodo.ErrOwnerExited, "run %d", i)
		<-p.Done()
	}
}

// Listen during a restart waits like a call: for at most WithMaxWait when
// its ctx sets no bound, then a -32001 wrapping ErrRestarting.
func TestListenDuringARestartHonoursMaxWait(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	slow := WithBackoff(Backoff{Initial: 5 * time.Second, Max: 5 * time.Second, Multiplier: 1})
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), slow, WithMaxWait(100*time.Millisecond), ev.option())
	require.NoError(t, err)
	defer c.Close()
	kill(t, c.serverPID())
	ev.waitFor(t, "exited", 5*time.Second)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second) // longer than WithMaxWait, shorter than the back-off
	defer cancel()
	_, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.ErrorIs(t, err, ErrRestarting, "Listen waited past WithMaxWait: %v", err)
	require.ErrorIs(t, err, snodo.ErrTimeout)
}

// ListenTo an actor that is not running is refused at once, as
// snodo.Client.Listen refuses it, instead of a subscription that ends as
// soon as it starts.
func TestListenToAnActorThatIsGone(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	defer c.Close()
	sys := snodoactor.Shared()
	gone := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	testutil.StopActor(t, sys, gone, 5*time.Second)
	_, err = c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(gone))
	require.ErrorIs(t, err, snodo.ErrOwnerExited)
	assert.ErrorContains(t, err, "does not exist")
}

// A reader that sees Events close reads the final Err at once, without
// waiting for Done: the host of the remote package does (it answered a
// teardown as a graceful end now and then, under load, when Events
// closed before Err was set).
func TestSubscriptionErrIsFinalOnceEventsClose(t *testing.T) {
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 1, fast)
	require.NoError(t, err)
	defer p.Close()
	for i := range 20 {
		sub, err := p.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
		require.NoError(t, err)
		raw, err := p.Request(t.Context(), "test/subscriptions", nil)
		require.NoError(t, err)
		var open struct{ Open []json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &open))
		require.Len(t, open.Open, 1)
		_, err = p.Request(t.Context(), "test/endSubscription", map[string]any{"subscription": open.Open[0], "mode": "teardown"})
		require.NoError(t, err)
		for range sub.Events() {
		}
		require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionTeardown, "run %d: Err as Events closed", i)
	}
}
