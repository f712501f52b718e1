package supervisor

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// serviceOutcome is what the service actor reports when all its calls
// are answered.
type serviceOutcome struct {
	replies   map[int]int // tag → replies received
	failed    int         // -32000 (the killed member's calls)
	answered  int
	victimPID int
	others    []error
}

// An actor-only service: it starts a pool with StartPool, sends its calls
// as messages before the pool is ready and after, kills a member in the
// middle of the load, and receives exactly one reply per call. The test
// itself starts no goroutine.
func TestActorOnlyServiceThroughAPoolWhileAMemberIsKilled(t *testing.T) {
	cmd, args := testutil.Server(t)
	const calls = 60
	sys := snodoactor.Shared()
	out := make(chan serviceOutcome, 1)
	var pool *Pool
	var startErr error
	res := serviceOutcome{replies: map[int]int{}}
	sent := 0
	send := func(ctx protoactor.Context, n int) {
		for ; n > 0 && sent < calls; n-- {
			ctx.Request(pool.PID(), &snodo.Call{Method: "test/sleep", Params: map[string]int{"ms": 30, "k": sent}, Tag: sent})
			sent++
		}
	}
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			pool, startErr = StartPool(context.Background(), ctx.ActorSystem(), ctx.Self(), snodo.Command(cmd, args...), 3, fast)
			if startErr != nil {
				ctx.Stop(ctx.Self())
				return
			}
			send(ctx, 6) // before readiness: they wait for the first member
		case *PoolReady:
			if msg.Err != nil {
				startErr = msg.Err
				ctx.Stop(ctx.Self())
				return
			}
			send(ctx, 12)
		case *snodo.Reply:
			tag := msg.Tag.(int)
			res.replies[tag]++
			switch {
			case msg.Err == nil:
				res.answered++
			case errors.Is(msg.Err, snodo.ErrConnectionClosed) && errors.Is(msg.Err, snodo.ErrServerExited):
				res.failed++
			default:
				res.others = append(res.others, msg.Err)
			}
			if res.answered == 10 && res.victimPID == 0 {
				res.victimPID = pool.Members()[0].serverPID()
				_ = syscall.Kill(res.victimPID, syscall.SIGKILL)
			}
			send(ctx, 1)
			if len(res.replies) == calls {
				out <- res
			}
		case *protoactor.Stopping:
			if pool != nil {
				_ = pool.Close() // from Stopping: returns without waiting for the servers
			}
		}
	}))
	var got serviceOutcome
	select {
	case got = <-out:
	case <-time.After(30 * time.Second):
		t.Fatalf("the service did not get all its replies (start error: %v)", startErr)
	}
	require.NoError(t, startErr)
	testutil.StopActor(t, sys, pid, 10*time.Second)
	for tag := range calls {
		assert.Equal(t, 1, got.replies[tag], "call %d got %d replies", tag, got.replies[tag])
	}
	assert.Empty(t, got.others)
	assert.NotZero(t, got.victimPID)
	assert.Equal(t, calls, got.answered+got.failed)
	assert.LessOrEqual(t, got.failed, 12, "only the victim's calls in flight fail")
	t.Logf("%d calls: %d answered, %d failed with -32000 (the killed member's)", calls, got.answered, got.failed)
	select {
	case <-pool.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the pool's servers were not reaped")
	}
	testutil.AssertReaped(t, got.victimPID, 5*time.Second)
	assert.ErrorIs(t, pool.Err(), snodo.ErrClosed)
}

// A supervised client's PID takes call messages too; once it has stopped,
// calls are still answered, with -32000.
func TestSupervisedClientTakesCallMessages(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	sys := snodoactor.Shared()
	got := make(chan any, 4)
	asker := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *snodo.ToolCall:
			ctx.Request(c.PID(), msg)
		case *snodo.ToolReply:
			got <- msg
		}
	}))
	defer sys.Root.Stop(asker)
	sys.Root.Send(asker, &snodo.ToolCall{Name: "echo", Args: map[string]string{"message": "hi"}, Tag: 1})
	r := (<-got).(*snodo.ToolReply)
	require.NoError(t, r.Err)
	assert.Equal(t, "hi", r.Result.Text())

	require.NoError(t, c.Close())
	sys.Root.Send(asker, &snodo.ToolCall{Name: "echo", Tag: 2})
	select {
	case m := <-got:
		assert.ErrorIs(t, m.(*snodo.ToolReply).Err, snodo.ErrConnectionClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("no reply from a stopped supervisor")
	}
	<-c.Done()
}
