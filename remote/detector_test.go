package remote

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// The detector's suspicion follows the beats it has seen: a steady host
// is suspected after 2 beats, one whose beats come late and scattered
// only after 3.5, and a host not heard yet after 3.
func TestSuspicionFollowsTheBeats(t *testing.T) {
	const beat = 500 * time.Millisecond
	var none *hostWatch
	assert.Equal(t, 3*beat, none.suspectAfter(beat))

	steady := &hostWatch{}
	for range 20 {
		steady.addGap(beat+time.Duration(len(steady.gaps))*time.Microsecond, time.Now())
	}
	assert.Equal(t, 2*beat, steady.suspectAfter(beat))

	late := &hostWatch{}
	for i := range 20 {
		late.addGap(beat+time.Duration(i%4)*200*time.Millisecond, time.Now())
	}
	assert.Equal(t, 1750*time.Millisecond, late.suspectAfter(beat))

	between := &hostWatch{}
	for i := range 20 {
		between.addGap(beat+time.Duration(i%2)*200*time.Millisecond, time.Now())
	}
	got := between.suspectAfter(beat)
	assert.Greater(t, got, 2*beat)
	assert.Less(t, got, 1750*time.Millisecond)
}

// 1,000 calls of 100 ms on two hosts beside four busy loops (goroutines
// spinning, on a 2-core machine: the hosts' beats and replies come late)
// all succeed: a late host is not declared gone.
func TestBusyHostsAreLateNotDead(t *testing.T) {
	e := natsServer(t)
	host(t, e, "ts", 2)
	host(t, e, "ts", 2)
	c := client(t, e, "ts")

	stop := make(chan struct{})
	var spinning sync.WaitGroup
	deadline := time.Now().Add(2 * time.Minute) // the loops stop by themselves
	for range 4 {
		spinning.Go(func() {
			for n := 0; ; n++ {
				if n%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
					if time.Now().After(deadline) {
						return
					}
				}
			}
		})
	}
	t.Cleanup(func() { close(stop); spinning.Wait() })

	const calls, workers = 1000, 40
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= calls {
				if _, err := c.Request(ctxFor(t, 2*time.Minute), "test/sleep", map[string]any{"ms": 100}); err != nil {
					failed.Add(1)
					t.Log(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls of 100 ms, %d at a time, beside 4 busy loops on GOMAXPROCS=%d: %s", calls, workers, runtime.GOMAXPROCS(0), time.Since(t0).Round(time.Millisecond))
	assert.Zero(t, failed.Load(), "calls failed")
}

// A host that sends nothing for 15 beats because its process is stopped
// (SIGSTOP: the extreme of a starved machine; its connection to NATS
// lives) is late, not gone: its calls end with their results once it
// runs again, and its subscription goes on (neither side ends it).
func TestStoppedHostIsLateNotDead(t *testing.T) {
	e := natsServer(t)
	a := startNode(t, e.URL(), writeConfig(t, "ts"))
	c := client(t, e, "ts", WithHeartbeat(100*time.Millisecond))

	sub, err := c.Listen(ctxFor(t, time.Minute), snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Request(ctxFor(t, time.Minute), "test/sleep", map[string]any{"ms": 1000})
			errs <- err
		}()
	}
	testutil.Eventually(t, func() bool { return inFlightOf(t, e, 1) >= n }, 20*time.Second, "calls held")
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	// Runs before the node's own cleanup, which could not stop it stopped.
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGCONT) })
	// How long the host is silent: the fault itself, not a wait for it.
	stopped := time.After(1500 * time.Millisecond)
	select {
	case err := <-errs:
		t.Fatalf("a call ended while its host was stopped: %v", err)
	case <-stopped:
	}
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	for range n {
		assert.NoError(t, <-errs)
	}
	assert.NoError(t, sub.Err(), "the subscription on the stopped host goes on")
	require.NoError(t, sub.Close())
}

// A client keeps a watch on at most maxWatched hosts, forgetting the
// least recently heard first; a host found gone is forgotten at once.
func TestWatchedHostsAreBounded(t *testing.T) {
	e := natsServer(t)
	c := client(t, e, "ts")
	first := c.watchFor("h0")
	for i := 1; i <= maxWatched+44; i++ {
		first.addGap(time.Millisecond, time.Now()) // h0 keeps being heard
		c.watchFor("h" + strconv.Itoa(i))
	}
	c.watchMu.Lock()
	n, kept := len(c.watched), c.watched["h0"] == first
	_, oldest := c.watched["h1"]
	c.watchMu.Unlock()
	assert.Equal(t, maxWatched, n)
	assert.True(t, kept, "the host heard last is kept")
	assert.False(t, oldest, "the least recently heard host is forgotten")

	// No host has that id: NATS has no responder for its control subject.
	c.suspect(first)
	testutil.Receive(t, first.gone, 5*time.Second, "the gone host's watch")
	testutil.Eventually(t, func() bool {
		c.watchMu.Lock()
		defer c.watchMu.Unlock()
		return c.watched["h0"] == nil
	}, 5*time.Second, "the gone host forgotten")
	assert.Positive(t, c.goneAt.Load())
}
