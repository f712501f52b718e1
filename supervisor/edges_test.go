package supervisor

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// Every reply carries an Origin, including the replies to call messages
// sent to a pool or a supervised client that has stopped (before, 48 of
// 48 such replies carried an empty one).
func TestRepliesOfAStoppedPoolCarryItsOrigin(t *testing.T) {
	cmd, args := testutil.Server(t)
	pool, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast,
		WithConnectOptions(snodo.WithOrigin(snodo.Origin{Server: "files"})))
	require.NoError(t, err)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	require.NoError(t, pool.Close())
	require.NoError(t, c.Close())
	<-pool.Done()
	<-c.Done()

	sys := snodoactor.Shared()
	const each = 16 // of Call, ToolCall and ListenCall: 48 calls per actor
	replies := make(chan snodo.Origin, 3*each)
	asker := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.PID:
			for i := range each {
				ctx.Request(msg, &snodo.Call{Method: "tools/list", Tag: i})
				ctx.Request(msg, &snodo.ToolCall{Name: "echo", Tag: i})
				ctx.Request(msg, &snodo.ListenCall{Filter: snodo.Filter{ToolsListChanged: true}, Tag: i})
			}
		case *snodo.Reply:
			assert.ErrorIs(t, msg.Err, snodo.ErrConnectionClosed)
			replies <- msg.Origin
		case *snodo.ToolReply:
			assert.ErrorIs(t, msg.Err, snodo.ErrConnectionClosed)
			replies <- msg.Origin
		case *snodo.ListenReply:
			assert.ErrorIs(t, msg.Err, snodo.ErrConnectionClosed)
			replies <- msg.Origin
		}
	}))
	defer testutil.StopActor(t, sys, asker, 5*time.Second)
	for _, to := range []struct {
		pid  *protoactor.PID
		want snodo.Origin
	}{
		{pool.PID(), snodo.Origin{Server: "files"}},
		{c.PID(), c.Origin()},
	} {
		sys.Root.Send(asker, to.pid)
		empty := 0
		for range 3 * each {
			o := testutil.Receive(t, replies, 10*time.Second, "a reply from a stopped actor")
			if o == (snodo.Origin{}) {
				empty++
			}
			assert.Equal(t, to.want, o)
		}
		assert.Zero(t, empty, "replies with an empty Origin")
	}
	assert.NotEmpty(t, c.Origin().Server)
}

// What a parent that is itself stopping receives from its pools and
// supervised clients (WithParent: it is their owner), in order: its own
// Stopping, then each child's *protoactor.Terminated (in the order they
// end), then its own Stopped. No Ended and no Reaped: before, Ended came
// for some children, before or after their Terminated, and Reaped never.
// Each child's Err is settled by its Terminated.
func TestAStoppingParentGetsTerminatedForEachChild(t *testing.T) {
	cmd, args := testutil.Server(t)
	sys := snodoactor.Shared()
	type child struct {
		pid  *protoactor.PID
		err  func() error
		done <-chan struct{}
	}
	children := make(chan []child, 1)
	var mu sync.Mutex
	var seen []string
	byPID := map[string]string{}
	stopped := make(chan struct{})
	parent := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		mu.Lock()
		defer mu.Unlock()
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			var cs []child
			for i := range 3 {
				p, err := StartPool(t.Context(), ctx.ActorSystem(), ctx.Self(), snodo.Command(cmd, args...), 1, fast, WithParent(ctx))
				if err != nil {
					t.Error(err)
					return
				}
				byPID[p.PID().Id] = fmt.Sprint("pool", i)
				cs = append(cs, child{p.PID(), p.Err, p.Done()})
			}
			c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, WithParent(ctx))
			if err != nil {
				t.Error(err)
				return
			}
			byPID[c.PID().Id] = "client"
			cs = append(cs, child{c.PID(), c.Err, c.Done()})
			children <- cs
		case *PoolReady:
		case *protoactor.Stopping:
			seen = append(seen, "Stopping")
		case *protoactor.Terminated:
			seen = append(seen, "Terminated "+byPID[msg.Who.Id])
		case *Ended:
			seen = append(seen, "Ended")
		case *Reaped:
			seen = append(seen, "Reaped")
		case *protoactor.Stopped:
			seen = append(seen, "Stopped")
			close(stopped)
		}
	}))
	cs := testutil.Receive(t, children, 20*time.Second, "the children")
	testutil.StopActor(t, sys, parent, 10*time.Second)
	testutil.Receive(t, stopped, 10*time.Second, "the parent's Stopped")
	for _, c := range cs {
		testutil.Receive(t, c.done, 10*time.Second, "a child's Done")
		assert.ErrorIs(t, c.err(), snodo.ErrOwnerExited)
	}

	mu.Lock()
	defer mu.Unlock()
	t.Logf("the stopping parent received: %v", seen)
	require.NotEmpty(t, seen)
	assert.Equal(t, "Stopping", seen[0])
	assert.Equal(t, "Stopped", seen[len(seen)-1])
	terminated := map[string]bool{}
	for _, s := range seen[1 : len(seen)-1] {
		assert.True(t, strings.HasPrefix(s, "Terminated "), "between Stopping and Stopped: %s", s)
		terminated[strings.TrimPrefix(s, "Terminated ")] = true
	}
	assert.Len(t, terminated, 4, "a Terminated per child")
}
