package supervisor

import (
	"slices"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// A pool started from an actor with WithParent is that actor's child:
// it shows in ctx.Children(), and its owner is told with one *Ended (the
// reason) and then one *Reaped when it stops.
func TestPoolStartedWithParentIsAChildAndTellsItsEnd(t *testing.T) {
	cmd, args := testutil.Server(t)
	sys := snodoactor.Shared()
	got := make(chan any, 8)
	var pool *Pool
	parent := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			var err error
			pool, err = StartPool(t.Context(), ctx.ActorSystem(), ctx.Self(), snodo.Command(cmd, args...), 2, fast, WithParent(ctx))
			if err != nil {
				t.Error(err)
			}
		case *PoolReady:
			got <- slices.ContainsFunc(ctx.Children(), func(pid *protoactor.PID) bool { return pid.Equal(msg.Pool.PID()) })
			_ = msg.Pool.Close()
		case *Ended, *Reaped:
			got <- msg
		}
	}))
	defer testutil.StopActor(t, sys, parent, time.Second)
	assert.Equal(t, true, testutil.Receive(t, got, 10*time.Second, "readiness"), "the pool is in ctx.Children()")
	ended := testutil.Receive(t, got, 5*time.Second, "Ended")
	require.IsType(t, &Ended{}, ended)
	assert.Same(t, pool, ended.(*Ended).Pool)
	assert.ErrorIs(t, ended.(*Ended).Err, snodo.ErrClosed)
	assert.NotEmpty(t, ended.(*Ended).Server)
	reaped := testutil.Receive(t, got, 10*time.Second, "Reaped")
	require.IsType(t, &Reaped{}, reaped)
	select {
	case <-pool.Done():
	default:
		t.Error("Reaped came before Done closed")
	}
}

// The child pool stops with its parent, and a supervised client started
// with WithParent too; neither is left running.
func TestPoolAndClientStopWithTheirParent(t *testing.T) {
	cmd, args := testutil.Server(t)
	sys := snodoactor.Shared()
	started := make(chan [2]any, 1)
	parent := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if _, ok := ctx.Message().(*protoactor.Started); ok {
			p, err := StartPool(t.Context(), ctx.ActorSystem(), ctx.Self(), snodo.Command(cmd, args...), 1, fast, WithParent(ctx))
			require.NoError(t, err)
			c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, WithParent(ctx))
			require.NoError(t, err)
			assert.Len(t, ctx.Children(), 2)
			started <- [2]any{p, c}
		}
	}))
	both := testutil.Receive(t, started, 10*time.Second, "the start")
	p, c := both[0].(*Pool), both[1].(*Client)
	testutil.StopActor(t, sys, parent, 5*time.Second)
	testutil.Receive(t, p.Done(), 10*time.Second, "the pool's Done")
	testutil.Receive(t, c.Done(), 10*time.Second, "the client's Done")
	assert.ErrorIs(t, p.Err(), snodo.ErrOwnerExited)
	assert.ErrorIs(t, c.Err(), snodo.ErrOwnerExited)
	testutil.VerifyNone(t)
}
