package snodo

import (
	"encoding/json"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// watchRig is a connection on an actor system of its own, so that the
// actors the test leaves behind can be counted.
type watchRig struct {
	sys      *protoactor.ActorSystem
	c        *Client
	baseline int // processes registered once the connection is up
}

func newWatchRig(t *testing.T, flags ...string) *watchRig {
	t.Helper()
	sys := snodoactor.NewQuietSystem(nil)
	t.Cleanup(sys.Shutdown) // after the connection's close (cleanups run last first)
	c := dialTest(t, flags, WithActorSystem(sys))
	return &watchRig{sys: sys, c: c, baseline: testutil.Actors(sys, "")}
}

// sender spawns an actor that sends each *sendTo with ctx.Request and
// puts what it receives on the returned channel.
func (r *watchRig) sender() (*protoactor.PID, chan any) {
	got := make(chan any, 64)
	pid := r.sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *sendTo:
			ctx.Request(msg.to, msg.msg)
		case *Reply, *ToolReply, *Progress:
			got <- msg
		}
	}))
	return pid, got
}

// requestIDs waits until the server has received n requests of method
// and returns their ids.
func (r *watchRig) requestIDs(t *testing.T, method string, n int) []int64 {
	t.Helper()
	var ids []int64
	testutil.Eventually(t, func() bool {
		ids = ids[:0]
		for _, req := range seen(t, r.c, method) {
			var id int64
			require.NoError(t, json.Unmarshal(req.ID, &id))
			ids = append(ids, id)
		}
		return len(ids) >= n
	}, 10*time.Second, "the server never got the requests")
	return ids
}

// cancelled waits (5 s at most) until the server has seen n
// notifications/cancelled and returns the ids they named.
func (r *watchRig) cancelled(t *testing.T, n int) []int64 {
	t.Helper()
	raw, err := r.c.Request(t.Context(), "test/waitNotification",
		map[string]any{"method": "notifications/cancelled", "count": n, "timeoutMs": 5000})
	require.NoError(t, err, "the server was not told the calls were cancelled")
	return testutil.CancelledIDs(t, raw)
}

// settled checks that no call runs, no target is watched and no watcher
// actor is left: the system has its baseline processes, plus extra.
func (r *watchRig) settled(t *testing.T, extra int) {
	t.Helper()
	h := r.c.calls
	testutil.Eventually(t, func() bool {
		return h.running.Load() == 0 && h.watchedTargets() == 0 && testutil.Actors(r.sys, "") == r.baseline+extra
	}, 10*time.Second, "calls, watches or watcher actors left behind")
}

// An actor sends a slow call, then stops: the call is cancelled at once
// (the server is told), long before its timeout, and nothing is left.
func TestCallCancelledWhenTheSenderStops(t *testing.T) {
	for _, kind := range []string{"Call", "ToolCall"} {
		t.Run(kind, func(t *testing.T) {
			r := newWatchRig(t)
			sender, got := r.sender()
			var method string
			var msg any
			if kind == "Call" {
				method, msg = "test/sleep", &Call{Method: "test/sleep", Params: map[string]any{"ms": 60000, "honorCancel": true}, Options: []RequestOption{Timeout(2 * time.Minute)}}
			} else {
				method, msg = "tools/call", &ToolCall{Name: "slow", Args: map[string]int{"ms": 60000}, Options: []RequestOption{Timeout(2 * time.Minute)}, Progress: true}
			}
			r.sys.Root.Send(sender, &sendTo{to: r.c.PID(), msg: msg})
			ids := r.requestIDs(t, method, 1)
			assert.Equal(t, 1, r.c.calls.watchedTargets())
			start := time.Now()
			testutil.StopActor(t, r.sys, sender, 5*time.Second)
			assert.Equal(t, ids, r.cancelled(t, 1))
			r.settled(t, 0)
			assert.Less(t, time.Since(start), 10*time.Second)
			for len(got) > 0 { // progress may have come before the stop
				_, isReply := (<-got).(*Reply)
				assert.False(t, isReply, "the reply came before the stop")
			}
		})
	}
}

// Two calls from one sender share one watcher; both are cancelled when
// it stops.
func TestCallsOfOneSenderShareOneWatch(t *testing.T) {
	r := newWatchRig(t)
	sender, _ := r.sender()
	for range 2 {
		r.sys.Root.Send(sender, &sendTo{to: r.c.PID(), msg: &Call{Method: "test/sleep", Params: map[string]any{"ms": 60000, "honorCancel": true}}})
	}
	ids := r.requestIDs(t, "test/sleep", 2)
	assert.Equal(t, 1, r.c.calls.watchedTargets())
	assert.Equal(t, 1, testutil.Actors(r.sys, "snodo-owner-watch"), "one watcher for both calls")
	testutil.StopActor(t, r.sys, sender, 5*time.Second)
	assert.ElementsMatch(t, ids, r.cancelled(t, 2))
	r.settled(t, 0)
}

// A sender that stays alive gets its replies as before, and the watch
// ends with its last call.
func TestCallOfALiveSenderIsAnswered(t *testing.T) {
	r := newWatchRig(t)
	sender, got := r.sender()
	for i := range 3 {
		r.sys.Root.Send(sender, &sendTo{to: r.c.PID(), msg: &Call{Method: "test/sleep", Params: map[string]int{"ms": 50}, Tag: i}})
	}
	for range 3 {
		reply := testutil.Receive(t, got, 10*time.Second, "a reply").(*Reply)
		require.NoError(t, reply.Err)
	}
	r.settled(t, 1) // the sender
	assert.Empty(t, seen(t, r.c, "notifications/cancelled"))
	testutil.StopActor(t, r.sys, sender, 5*time.Second)
}

// ReplyTo names the target: when it stops, the call is cancelled even
// though its sender lives.
func TestCallCancelledWhenItsReplyToStops(t *testing.T) {
	r := newWatchRig(t)
	sender, got := r.sender()
	replyTo, _ := r.sender()
	r.sys.Root.Send(sender, &sendTo{to: r.c.PID(), msg: &Call{Method: "test/sleep", Params: map[string]any{"ms": 60000, "honorCancel": true}, ReplyTo: replyTo}})
	ids := r.requestIDs(t, "test/sleep", 1)
	testutil.StopActor(t, r.sys, replyTo, 5*time.Second)
	assert.Equal(t, ids, r.cancelled(t, 1))
	r.settled(t, 1) // the sender
	assert.Empty(t, got, "the sender is not the reply target")
	testutil.StopActor(t, r.sys, sender, 5*time.Second)
}

// A ReplyTo that never existed: nobody could receive the reply, so the
// call is cancelled at once (the server is told if it got the request).
func TestCallWithAReplyToThatNeverExistedIsCancelled(t *testing.T) {
	r := newWatchRig(t)
	nobody := protoactor.NewPID(r.sys.Address(), "never-existed")
	r.sys.Root.Send(r.c.PID(), &Call{Method: "test/sleep", Params: map[string]any{"ms": 60000, "honorCancel": true}, ReplyTo: nobody})
	r.settled(t, 0)
	if ids := r.requestIDs(t, "test/sleep", 0); len(ids) > 0 {
		assert.Equal(t, ids, r.cancelled(t, 1))
	}
}

// A protoactor future as the sender is not watched (a Watch would be
// taken for its result): it gets its Reply.
func TestCallFromAFutureIsAnswered(t *testing.T) {
	r := newWatchRig(t)
	res, err := r.sys.Root.RequestFuture(r.c.PID(), &Call{Method: "test/echo", Params: map[string]int{"n": 1}}, 10*time.Second).Result()
	require.NoError(t, err)
	reply, ok := res.(*Reply)
	require.True(t, ok, "the future got a %T", res)
	require.NoError(t, reply.Err)
	r.settled(t, 0)
}

// Many senders, many calls each, some senders stopped at random moments:
// every live sender gets all its replies, and no call, watch or watcher
// actor is left.
func TestCallWatchesUnderRandomStops(t *testing.T) {
	r := newWatchRig(t)
	const senders, calls = 24, 12
	var wg sync.WaitGroup
	for s := range senders {
		pid, got := r.sender()
		stops := s%2 == 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				r.sys.Root.Send(pid, &sendTo{to: r.c.PID(), msg: &Call{Method: "test/sleep", Params: map[string]int{"ms": rand.IntN(100)}, Tag: i}})
				if stops && rand.IntN(calls) == 0 {
					break
				}
			}
			if stops {
				time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
				r.sys.Root.Stop(pid)
				return
			}
			for range calls { // no t.Fatal off the test's goroutine
				select {
				case m := <-got:
					assert.NoError(t, m.(*Reply).Err)
				case <-time.After(30 * time.Second):
					t.Error("a live sender's call was not answered")
					return
				}
			}
			r.sys.Root.Stop(pid)
		}()
	}
	wg.Wait()
	r.settled(t, 0)
}

// Calls keep coming for a reply target while it stops: those that joined
// its watch are cancelled by it, those that come after start a fresh
// watch that finds it gone; every call ends and every watcher goes.
func TestCallsRegisteringWhileTheTargetStops(t *testing.T) {
	r := newWatchRig(t)
	sender, got := r.sender()
	for round := range 5 {
		victim, _ := r.sender()
		for i := range 40 {
			if i == 20 {
				r.sys.Root.Stop(victim)
			}
			r.sys.Root.Send(sender, &sendTo{to: r.c.PID(), msg: &Call{Method: "test/sleep", Params: map[string]any{"ms": 60000, "honorCancel": true}, ReplyTo: victim, Tag: i}})
		}
		r.sys.Root.Send(sender, &sendTo{to: r.c.PID(), msg: &Call{Method: "test/echo", Tag: round}})
		require.NoError(t, testutil.Receive(t, got, 10*time.Second, "the sender's own reply").(*Reply).Err)
	}
	r.settled(t, 1) // the sender
	testutil.StopActor(t, r.sys, sender, 5*time.Second)
}

// A call whose target is already watched only counts itself in: no
// allocation (the first call of a target spawns its watcher).
func TestJoiningAWatchAllocatesNothing(t *testing.T) {
	sys := snodoactor.NewQuietSystem(nil)
	defer sys.Shutdown()
	target := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	var h callHandler // the zero value works
	_, first := h.watch(sys, target)
	allocs := testing.AllocsPerRun(1000, func() {
		_, w := h.watch(sys, target)
		h.release(w)
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 1, testutil.Actors(sys, "snodo-owner-watch"))
	h.release(first)
	testutil.Eventually(t, func() bool { return testutil.Actors(sys, "snodo-owner-watch") == 0 && h.watchedTargets() == 0 },
		5*time.Second, "the watcher outlives the last call")
	testutil.StopActor(t, sys, target, 5*time.Second)
}
