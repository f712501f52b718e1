package supervisor

import (
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// Every message a pool sends to actors says which server and which
// member it comes from, and they agree: replies, progress, notifications,
// a ListenCall's reply and events, lifecycle events, and the supervised
// subscription's Member().
func TestPoolMessagesCarryTheirOrigin(t *testing.T) {
	cmd, args := testutil.Server(t)
	sys := snodoactor.Shared()
	got := make(chan any, 64)
	collector := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch ctx.Message().(type) {
		case *snodo.Reply, *snodo.Progress, *snodo.Notification, *snodo.ListenReply,
			*snodo.SubscriptionEvent, *LifecycleEvent:
			got <- ctx.Message()
		}
	}))
	defer testutil.StopActor(t, sys, collector, time.Second)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast, WithConnectOptions(snodo.WithOrigin(snodo.Origin{Server: "calc"})), WithEventsTo(collector),
		WithConnectOptions(snodo.WithNotificationHandler(snodo.NotificationsTo(sys, collector))))
	require.NoError(t, err)
	defer p.Close()
	members := map[string]bool{}
	for _, m := range p.Members() {
		assert.Equal(t, "calc", m.Origin().Server)
		members[m.Origin().Member] = true
	}
	assert.Equal(t, map[string]bool{"calc#1": true, "calc#2": true}, members)

	sys.Root.Send(p.PID(), &snodo.Call{Method: "test/progress", Params: map[string]int{"count": 1}, Progress: true, Tag: "p", ReplyTo: collector})
	sys.Root.Send(p.PID(), &snodo.Call{Method: "test/notify", Tag: "n", ReplyTo: collector, Params: map[string]any{
		"method": "notifications/message", "params": map[string]string{"level": "info", "data": "hi"}}})
	sys.Root.Send(p.PID(), &snodo.ListenCall{Filter: snodo.Filter{ToolsListChanged: true}, Tag: "l", ReplyTo: collector})

	var sub *snodo.Subscription
	seen := map[string]snodo.Origin{}
	lifecycle := 0
	for len(seen) < 5 || lifecycle < 2 {
		var o snodo.Origin
		switch m := testutil.Receive(t, got, 5*time.Second, "the pool's messages").(type) {
		case *snodo.Reply:
			require.NoError(t, m.Err)
			o = m.Origin
			seen["reply "+m.Tag.(string)] = o
		case *snodo.Progress:
			o = m.Origin
			seen["progress"] = o
		case *snodo.Notification:
			o = m.Origin
			seen["notification"] = o
		case *snodo.ListenReply:
			require.NoError(t, m.Err)
			o = m.Origin
			seen["listen"] = o
			sub = m.Subscription
			assert.Equal(t, memberOf(sub).Origin(), o, "the ListenReply names the member holding the subscription")
		case *LifecycleEvent:
			o = m.Origin
			lifecycle++
		default:
			continue
		}
		assert.Equal(t, "calc", o.Server, "%T", o)
		assert.True(t, members[o.Member], "member %q", o.Member)
	}
	assert.Equal(t, seen["reply p"], seen["progress"], "progress and reply come from the same member")

	// The subscription's events name the member that holds it.
	sys.Root.Send(memberOf(sub).PID(), &snodo.Call{Method: "test/emit", ReplyTo: collector,
		Params: map[string]string{"method": "notifications/tools/list_changed"}})
	for {
		if ev, ok := testutil.Receive(t, got, 5*time.Second, "the event").(*snodo.SubscriptionEvent); ok {
			assert.Equal(t, memberOf(sub).Origin(), ev.Origin)
			break
		}
	}
	require.NoError(t, sub.Close())
}
