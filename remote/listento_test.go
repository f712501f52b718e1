package remote

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// A ListenTo actor gets a remote subscription's events as messages, the
// host's resubscribed marker after its server restarts, then one end,
// as for a supervised or pooled subscription.
func TestRemoteListenToAcrossARestart(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1, supervisor.WithBackoff(supervisor.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 2}))
	require.NoError(t, err)
	h, err := NewHost(context.Background(), e.URL(), Serve("events", p))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	sys := snodoactor.NewQuietSystem(nil)
	tp, rec := recorder(t)
	c := client(t, e, "events", WithConnectOptions(snodo.WithActorSystem(sys)), WithHeartbeat(100*time.Millisecond), WithConnectOptions(snodo.WithTracerProvider(tp)))
	ctx := ctxFor(t, 20*time.Second)

	got := make(chan any, 16)
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *snodo.SubscriptionEvent, *snodo.SubscriptionEnded:
			got <- msg
		}
	}))
	defer sys.Root.Stop(pid)
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(pid))
	require.NoError(t, err)
	next := func() any {
		t.Helper()
		return testutil.Receive(t, got, 5*time.Second, "a message")
	}
	emit := func() {
		_, err := c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
		require.NoError(t, err)
	}
	emit()
	ev := next().(*snodo.SubscriptionEvent)
	assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	assert.Same(t, sub, ev.Subscription, "the messages name the subscription Listen returned")

	require.NoError(t, syscall.Kill(p.Members()[0].Current().ServerPID(), syscall.SIGKILL))
	assert.Equal(t, supervisor.ResubscribedMethod, next().(*snodo.SubscriptionEvent).Method)
	emit()
	assert.Equal(t, "notifications/tools/list_changed", next().(*snodo.SubscriptionEvent).Method)
	require.NoError(t, sub.Close())
	_, open := <-sub.Events()
	assert.False(t, open, "with ListenTo, Events only closes")
	end := next().(*snodo.SubscriptionEnded)
	assert.ErrorIs(t, end.Err, snodo.ErrSubscriptionClosed)
	assert.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionClosed)
	assert.Len(t, ended(rec, "notifications/tools/list_changed"), 2, "the server's events are traced")
	assert.Empty(t, ended(rec, supervisor.ResubscribedMethod), "the host's marker is no notification of the server's")
}

// The subscription watches its ListenTo actor: when it stops, the
// subscription ends with ErrOwnerExited and is cancelled on the host.
func TestRemoteSubscriptionEndsWithItsListenToActor(t *testing.T) {
	e := natsServer(t)
	host(t, e, "events", 1)
	c := client(t, e, "events", WithHeartbeat(100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)
	sys := snodoactor.Shared() // the default system
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(pid))
	require.NoError(t, err)
	sys.Root.Stop(pid)
	select {
	case <-sub.Done():
	case <-ctx.Done():
		t.Fatal("subscription outlived its actor")
	}
	assert.ErrorIs(t, sub.Err(), snodo.ErrOwnerExited)
	// The host cancelled it on its MCP server.
	require.Eventually(t, func() bool {
		raw, err := c.Request(ctx, "test/subscriptions", nil)
		var open struct{ Open []json.RawMessage }
		return err == nil && json.Unmarshal(raw, &open) == nil && len(open.Open) == 0
	}, 5*time.Second, 20*time.Millisecond)
}
