package supervisor

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

func serverPIDs(p *Pool) []int {
	var pids []int
	for _, m := range p.Members() {
		pids = append(pids, m.serverPID())
	}
	return pids
}

// Kill one member of a pool under load from 8 goroutines: its in-flight
// calls fail with -32000 and are not retried anywhere, other calls keep
// being answered, and the member comes back and takes calls again.
func TestPoolKeepsAnsweringWhenAMemberIsKilled(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 3, fast, ev.option())
	require.NoError(t, err)
	pids := serverPIDs(p)
	victim := p.Members()[0]
	oldPID := victim.serverPID()

	type outcome struct {
		k   int
		at  time.Time
		err error
	}
	var (
		next    atomic.Int64
		mu      sync.Mutex
		results []outcome
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := int(next.Add(1))
				_, err := p.Request(t.Context(), "test/sleep", map[string]int{"ms": 20, "k": k})
				mu.Lock()
				results = append(results, outcome{k, time.Now(), err})
				mu.Unlock()
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	killedAt := time.Now()
	kill(t, oldPID)
	var back LifecycleEvent
	for {
		back = ev.waitFor(t, "connected", 5*time.Second)
		if back.Member == victim.s.cfg.name && back.Total > 0 {
			break
		}
	}
	backAt := time.Now()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	var failed, answeredDuringGap, answered int
	var failedKs []int
	for _, r := range results {
		if r.err != nil {
			failed++
			failedKs = append(failedKs, r.k)
			var e *snodo.Error
			if assert.ErrorAs(t, r.err, &e) {
				assert.Equal(t, snodo.CodeConnectionClosed, e.Code, "%v", r.err)
			}
			assert.True(t, lostConnection(r.err), "%v", r.err) // exit seen first, or a write that hit the dead pipe
			continue
		}
		answered++
		if r.at.After(killedAt) && r.at.Before(backAt) {
			answeredDuringGap++
		}
	}
	assert.NotZero(t, failed, "the victim had calls in flight")
	assert.LessOrEqual(t, failed, 8)
	t.Logf("%d calls: %d answered (%d between the kill and the member's return, %s), %d failed with -32000; restart latency %s",
		len(results), answered, answeredDuringGap, backAt.Sub(killedAt).Round(time.Millisecond), failed, back.Downtime.Round(time.Millisecond))

	// No call was silently retried: the failed ones reached no live
	// server, and no call reached two.
	seen := map[int]int{}
	for _, m := range p.Members() {
		raw, err := m.Request(t.Context(), "test/requests", map[string]string{"method": "test/sleep"})
		require.NoError(t, err)
		ks := sleepCalls(t, raw)
		if m == victim {
			assert.NotEmpty(t, ks, "the restarted member takes calls again")
		}
		for _, k := range ks {
			seen[k]++
		}
	}
	for _, k := range failedKs {
		assert.Zero(t, seen[k], "failed call %d was sent again", k)
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, "call %d reached %d servers", k, n)
	}
	assert.Equal(t, 1, victim.Restarts())
	assert.NotEqual(t, oldPID, victim.serverPID())

	pids = append(pids, victim.serverPID())
	require.NoError(t, p.Close())
	assert.ErrorIs(t, p.Err(), snodo.ErrClosed)
	for _, pid := range pids {
		testutil.AssertReaped(t, pid, 5*time.Second)
	}
	_, err = p.Request(t.Context(), "test/echo", nil)
	assert.ErrorIs(t, err, snodo.ErrConnectionClosed)
}

func TestPoolIdempotentCallMovesToAnotherMember(t *testing.T) {
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
	require.NoError(t, err)
	defer p.Close()
	done := make(chan error, 1)
	go func() {
		_, err := p.Request(t.Context(), "test/sleep", map[string]int{"ms": 500, "k": 42}, snodo.Idempotent())
		done <- err
	}()
	var holder *Client
	testutil.Eventually(t, func() bool {
		for _, m := range p.Members() {
			raw, err := m.Request(t.Context(), "test/requests", map[string]string{"method": "test/sleep"})
			if err == nil && slices.Contains(sleepCalls(t, raw), 42) {
				holder = m
				return true
			}
		}
		return false
	}, 2*time.Second, "the call reached a member")
	t0 := time.Now()
	kill(t, holder.serverPID())
	require.NoError(t, <-done)
	t.Logf("idempotent call answered by the other member %s after the kill (its 500 ms sleep included)", time.Since(t0).Round(time.Millisecond))
}

func TestPoolGrowsAndShrinks(t *testing.T) {
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 1, fast)
	require.NoError(t, err)
	require.NoError(t, p.Grow(3))
	assert.Equal(t, 4, len(p.Members()))
	pids := serverPIDs(p)
	assert.Len(t, pids, 4)
	for range 8 {
		_, err := p.CallTool(t.Context(), "echo", map[string]string{"message": "x"})
		require.NoError(t, err)
	}
	require.NoError(t, p.Shrink(3))
	assert.Equal(t, 1, len(p.Members()))
	kept := serverPIDs(p)[0]
	for _, pid := range pids {
		if pid != kept {
			testutil.AssertReaped(t, pid, 5*time.Second)
		}
	}
	assert.Error(t, p.Shrink(1), "a pool keeps one member")
	_, err = p.Request(t.Context(), "test/echo", nil)
	require.NoError(t, err)
	require.NoError(t, p.Close())
	testutil.AssertReaped(t, kept, 5*time.Second)
	assert.Error(t, p.Grow(1))
}

// An actor owns a pool and a supervised connection exactly as it owns a
// plain connection: when it stops, they stop.
func TestOwnerActorStopsPoolAndClient(t *testing.T) {
	sys := snodoactor.Shared()
	seen := make(chan *LifecycleEvent, 16)
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if ev, ok := ctx.Message().(*LifecycleEvent); ok {
			seen <- ev
		}
	}))
	cmd, args := testutil.Server(t)
	p, err := NewPool(context.Background(), snodo.Command(cmd, args...), 2, fast, WithConnectOptions(snodo.WithOwner(owner)), WithEventsTo(owner))
	require.NoError(t, err)
	assert.Equal(t, "connected", (<-seen).Kind, "events reach the actor as messages")
	c, err := Connect(context.Background(), snodo.Command(cmd, args...), fast, WithConnectOptions(snodo.WithOwner(owner)))
	require.NoError(t, err)
	pids := append(serverPIDs(p), c.serverPID())

	sys.Root.Stop(owner)
	for _, done := range []<-chan struct{}{p.Done(), c.Done()} {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("not stopped with its owner")
		}
	}
	assert.ErrorIs(t, p.Err(), snodo.ErrOwnerExited)
	assert.ErrorIs(t, c.Err(), snodo.ErrOwnerExited)
	for _, pid := range pids {
		testutil.AssertReaped(t, pid, 5*time.Second)
	}
}

func TestPoolEndsWhenEveryMemberGivesUp(t *testing.T) {
	_, err := NewPool(t.Context(), snodo.Command("sh", "-c", "read line; exit 3"), 2, fast, WithIntensity(1, 10*time.Second))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrGaveUp)
	assert.Contains(t, err.Error(), "gave up after 1 restart in 10s: server exited with status 3")
	assert.Empty(t, testutil.ChildPIDs())
}

// Close during a Shrink that waits for a busy member: the member being
// taken out is the pool's until it is closed, so Close closes it too (its
// call fails with -32000 wrapping ErrClosed) and Done waits for its server.
func TestPoolCloseDuringShrink(t *testing.T) {
	cmd, args := testutil.Server(t, "-eof-grace", "10ms") // exit at EOF without finishing the sleeps
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
	require.NoError(t, err)
	members := p.Members()
	calls := make(chan error, len(members))
	for _, m := range members {
		go func() {
			_, err := m.Request(context.Background(), "test/sleep", map[string]int{"ms": 10000})
			calls <- err
		}()
	}
	require.Eventually(t, func() bool { return members[0].InFlight() == 1 && members[1].InFlight() == 1 },
		5*time.Second, 5*time.Millisecond)
	shrunk := make(chan error, 1)
	go func() { shrunk <- p.Shrink(1) }()
	require.Eventually(t, func() bool { return len(p.Members()) == 1 }, 5*time.Second, 5*time.Millisecond)

	require.NoError(t, p.Close())
	for range members {
		select {
		case err := <-calls:
			require.ErrorIs(t, err, snodo.ErrClosed)
		case <-time.After(5 * time.Second):
			t.Fatal("a call on the member being shrunk still runs after the pool's Close")
		}
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the pool's Done did not close")
	}
	for _, m := range members {
		select {
		case <-m.Done():
		default:
			t.Fatalf("the pool is done but member %s still runs", m.s.cfg.name)
		}
	}
	select {
	case <-shrunk:
	case <-time.After(5 * time.Second):
		t.Fatal("Shrink did not return after Close")
	}
}

// Close while StartPool's members are still starting: Done waits for
// every server started for the pool, and none outlives it.
func TestPoolCloseWhileStarting(t *testing.T) {
	cmd, args := testutil.Server(t)
	sys := snodoactor.Shared()
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	defer sys.Root.Stop(owner)
	for i := range 8 {
		before := testutil.ChildPIDs()
		p, err := StartPool(t.Context(), sys, owner, snodo.Command(cmd, args...), 3, fast)
		require.NoError(t, err)
		time.Sleep(time.Duration(i*4) * time.Millisecond) // the members' servers are starting
		require.NoError(t, p.Close())
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the pool's Done did not close")
		}
		var left []int
		for _, pid := range testutil.ChildPIDs() {
			if !slices.Contains(before, pid) {
				left = append(left, pid)
			}
		}
		require.Empty(t, left, "servers started for the pool outlive its Done")
	}
}

// Shrink's wait for the calls of the members it takes out is bounded by
// WithMaxWait, even for a call that waits for ever (Timeout(-1)): past
// it the member is closed and the call fails with -32000 wrapping
// ErrClosed.
func TestShrinkWaitIsBoundedForCallsWithoutTimeout(t *testing.T) {
	cmd, args := testutil.Server(t, "-eof-grace", "10ms") // exit at EOF without finishing the sleeps
	const bound = 300 * time.Millisecond
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast, WithMaxWait(bound))
	require.NoError(t, err)
	defer func() {
		require.NoError(t, p.Close())
		testutil.Receive(t, p.Done(), 5*time.Second, "the pool's Done")
	}()
	members := p.Members()
	calls := make([]chan error, len(members))
	for i, m := range members {
		calls[i] = make(chan error, 1)
		go func() {
			_, err := m.Request(context.Background(), "test/sleep", map[string]int{"ms": 10000}, snodo.Timeout(-1))
			calls[i] <- err
		}()
	}
	require.Eventually(t, func() bool { return members[0].InFlight() == 1 && members[1].InFlight() == 1 },
		5*time.Second, 5*time.Millisecond)
	t0 := time.Now()
	shrunk := make(chan error, 1)
	go func() { shrunk <- p.Shrink(1) }()
	require.NoError(t, testutil.Receive(t, shrunk, 3*time.Second, "Shrink past WithMaxWait"))
	took := time.Since(t0)
	t.Logf("Shrink returned after %s (WithMaxWait %s)", took.Round(time.Millisecond), bound)
	assert.GreaterOrEqual(t, took, bound, "Shrink did not wait for the call")
	gone := 0 // Shrink takes the first member on a tie
	if p.Members()[0] == members[0] {
		gone = 1
	}
	err = testutil.Receive(t, calls[gone], time.Second, "the cut call's error")
	require.ErrorIs(t, err, snodo.ErrClosed)
	select {
	case err := <-calls[1-gone]:
		t.Fatalf("the call on the member that stays ended: %v", err)
	default:
	}
}
