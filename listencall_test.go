package snodo

import (
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// A *ListenCall opens a subscription in either era: the reply target
// gets the *ListenReply, then the events.
func TestListenCallInEachEra(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		sys := snodoactor.Shared()
		got := make(chan any, 4)
		pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
			switch msg := ctx.Message().(type) {
			case *protoactor.Started:
				ctx.Request(c.PID(), &ListenCall{Filter: Filter{ToolsListChanged: true}, Tag: "listen"})
			case *ListenReply, *SubscriptionEvent:
				got <- msg
			}
		}))
		defer testutil.StopActor(t, sys, pid, time.Second)
		lr := testutil.Receive(t, got, 5*time.Second, "the listen reply").(*ListenReply)
		require.NoError(t, lr.Err)
		assert.Equal(t, "listen", lr.Tag)
		assert.True(t, lr.Subscription.Acknowledged().ToolsListChanged)
		emitTo(t, c, lr.Subscription, methodToolsListChanged)
		ev := testutil.Receive(t, got, 5*time.Second, "the event").(*SubscriptionEvent)
		assert.Equal(t, methodToolsListChanged, ev.Event.Method)
		require.NoError(t, lr.Subscription.Close())
	})
}
