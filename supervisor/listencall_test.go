package supervisor

import (
	"strings"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/listening"
	"github.com/snodo/snodo/test/testutil"
)

// A *snodo.ListenCall to a pool whose server never acknowledges blocks
// no mailbox: the sender's own messages and a call to the pool are
// handled meanwhile, and the ListenReply comes last, with the timeout
// (its message says "snodo:" once).
func TestPoolListenCallBlocksNoMailbox(t *testing.T) {
	cmd, args := testutil.Server(t, "-silent-listen")
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 1, fast,
		WithConnectOptions(snodo.WithTimeout(time.Second)))
	require.NoError(t, err)
	defer p.Close()
	sys := snodoactor.Shared()
	got := make(chan any, 8)
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			ctx.Request(p.PID(), &snodo.ListenCall{Filter: snodo.Filter{ToolsListChanged: true}, Tag: "listen"})
			ctx.Request(p.PID(), &snodo.Call{Method: "tools/list", Tag: "call"})
			ctx.Send(ctx.Self(), "echo")
		case string, *snodo.Reply, *snodo.ListenReply, *snodo.SubscriptionEvent, *snodo.SubscriptionEnded:
			got <- msg
		}
	}))
	defer testutil.StopActor(t, sys, pid, time.Second)
	first := testutil.Receive(t, got, 5*time.Second, "the echo")
	assert.Equal(t, "echo", first, "the actor's own message waits for no listen")
	reply := testutil.Receive(t, got, 5*time.Second, "the call's reply")
	require.IsType(t, &snodo.Reply{}, reply, "the pool answers calls while a listen waits")
	require.NoError(t, reply.(*snodo.Reply).Err)
	lr := testutil.Receive(t, got, 10*time.Second, "the listen reply")
	require.IsType(t, &snodo.ListenReply{}, lr)
	listen := lr.(*snodo.ListenReply)
	assert.Equal(t, "listen", listen.Tag)
	assert.Nil(t, listen.Subscription)
	require.ErrorIs(t, listen.Err, snodo.ErrTimeout)
	assert.Equal(t, 1, strings.Count(listen.Err.Error(), "snodo:"), "one prefix: %v", listen.Err)
	select {
	case m := <-got:
		t.Fatalf("a failed listen is followed by nothing, got %T", m)
	case <-time.After(200 * time.Millisecond):
	}
}

// A ListenCall to a pool opens a subscription that holds a member: the
// ListenReply comes before the events, and the events go to the sender.
func TestPoolListenCallDeliversAfterItsReply(t *testing.T) {
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
	require.NoError(t, err)
	defer p.Close()
	sys := snodoactor.Shared()
	got := make(chan any, 8)
	emit := &snodo.Call{Method: "test/emit", Params: map[string]string{"method": "notifications/tools/list_changed"}}
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			ctx.Request(p.PID(), &snodo.ListenCall{Filter: snodo.Filter{ToolsListChanged: true}, Tag: 7})
		case *snodo.ListenReply:
			got <- msg
			if msg.Err == nil {
				ctx.Request(memberOf(msg.Subscription).PID(), emit)
			}
		case *snodo.SubscriptionEvent, *snodo.SubscriptionEnded:
			got <- msg
		}
	}))
	lr := testutil.Receive(t, got, 5*time.Second, "the listen reply")
	require.IsType(t, &snodo.ListenReply{}, lr)
	require.NoError(t, lr.(*snodo.ListenReply).Err)
	assert.Equal(t, 7, lr.(*snodo.ListenReply).Tag)
	ev := testutil.Receive(t, got, 5*time.Second, "the event")
	require.IsType(t, &snodo.SubscriptionEvent{}, ev)
	assert.Equal(t, "notifications/tools/list_changed", ev.(*snodo.SubscriptionEvent).Method)
	require.NoError(t, lr.(*snodo.ListenReply).Subscription.Close())
	end := testutil.Receive(t, got, 5*time.Second, "the end")
	require.IsType(t, &snodo.SubscriptionEnded{}, end)
	assert.ErrorIs(t, end.(*snodo.SubscriptionEnded).Err, snodo.ErrSubscriptionClosed)
	testutil.StopActor(t, sys, pid, time.Second)
}

// memberOf is the member holding a supervised subscription.
func memberOf(sub *snodo.Subscription) *Client {
	return listening.ImplOf((*listening.Sub)(sub)).(*supervised).Member()
}
