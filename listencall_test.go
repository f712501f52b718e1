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

// A *SubscribeResourceCall is SubscribeResource as a message, answered
// with one *Reply: done on a legacy server, refused with
// ErrSubscribeUnsupported on a modern one. A *ListenCall to a legacy
// server is answered with ErrListenUnsupported.
func TestSubscribeResourceCall(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		sys := snodoactor.Shared()
		got := make(chan any, 4)
		pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
			switch msg := ctx.Message().(type) {
			case *protoactor.Started:
				ctx.Request(c.PID(), &SubscribeResourceCall{URI: "test://static/1", Tag: "sub"})
			case *Reply:
				got <- msg
				if msg.Tag == "sub" {
					ctx.Request(c.PID(), &ListenCall{Filter: Filter{ToolsListChanged: true}, Tag: "listen"})
				}
			case *ListenReply:
				got <- msg
			}
		}))
		defer testutil.StopActor(t, sys, pid, time.Second)
		r := testutil.Receive(t, got, 5*time.Second, "the reply").(*Reply)
		assert.Equal(t, "sub", r.Tag)
		lr := testutil.Receive(t, got, 5*time.Second, "the listen reply").(*ListenReply)
		if c.Era() == EraModern {
			require.ErrorIs(t, r.Err, ErrSubscribeUnsupported)
			require.NoError(t, lr.Err)
			require.NoError(t, lr.Subscription.Close())
			return
		}
		require.NoError(t, r.Err)
		require.ErrorIs(t, lr.Err, ErrListenUnsupported)
	})
}
