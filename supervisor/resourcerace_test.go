package supervisor

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// SubscribeResource racing a member's give-up: every URI subscribed
// while the member dies ends on the member that stays (moved by the
// give-up, or subscribed there at once), and SubscribeResource does not
// fail while the pool lives on.
func TestPoolSubscribeResourceRacingAGiveUpEndsOnAMemberInRotation(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "legacy")
	const runs, uris = 15, 8
	var failed []string
	for run := range runs {
		ev := newEvents()
		p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast, WithIntensity(0, time.Minute), ev.option())
		require.NoError(t, err)
		victim := p.Members()[run%2]
		errs := make([]error, uris)
		atOnce(uris, func(i int) {
			errs[i] = p.SubscribeResource(t.Context(), fmt.Sprintf("test://r%d", i))
		}, func() { kill(t, victim.serverPID()) })
		stays := afterGiveUp(t, p, ev)
		for i := range uris {
			uri := fmt.Sprintf("test://r%d", i)
			if errs[i] != nil {
				failed = append(failed, fmt.Sprintf("run %d %s: SubscribeResource failed while the pool lives on: %v", run, uri, errs[i]))
				continue
			}
			if !eventually(func() bool { return touched(t, stays, uri) }, 3*time.Second) {
				failed = append(failed, fmt.Sprintf("run %d %s: not held by the member that stays", run, uri))
			}
		}
		require.NoError(t, p.Close())
		testutil.Receive(t, p.Done(), 10*time.Second, "the pool's Done")
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d resource subscriptions were not on the member in rotation after a give-up:\n%v", len(failed), runs*uris, failed)
	}
}

// eventually polls cond until it holds (true) or within passes (false).
func eventually(cond func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SubscribeResource racing Shrink, ordered without timing: the subscribe
// is in flight on member a (its server pauses reading for 500 ms, so it
// is answered late) when Shrink takes a out (b is busier: two calls of
// 1.5 s) and waits for it. The URI
// ends on b, the member that stays, once both return: it was lost
// silently (SubscribeResource returned nil, nothing held it) when the
// subscribe was recorded only if a was still in rotation.
func TestPoolSubscribeResourceInFlightOnAMemberShrinkTakesOut(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "legacy")
	for run := range 2 {
		p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
		require.NoError(t, err)
		a, b := p.Members()[0], p.Members()[1]
		var busy sync.WaitGroup
		for range 2 {
			busy.Go(func() { _, _ = b.Request(t.Context(), "test/sleep", map[string]int{"ms": 1500}) })
		}
		testutil.Eventually(t, func() bool { return b.InFlight() == 2 }, 5*time.Second, "b is busy")
		_, err = a.Request(t.Context(), "test/pauseReading", map[string]int{"ms": 500})
		require.NoError(t, err)
		subscribed := make(chan error, 1)
		go func() { subscribed <- p.SubscribeResource(t.Context(), "test://a") }()
		testutil.Eventually(t, func() bool { return a.InFlight() == 1 }, 5*time.Second, "the subscribe is in flight on a")
		require.NoError(t, p.Shrink(1))
		require.Equal(t, []*Client{b}, p.Members(), "Shrink took a out")
		require.NoError(t, testutil.Receive(t, subscribed, 5*time.Second, "SubscribeResource"), "run %d", run)
		require.True(t, touched(t, b, "test://a"), "run %d: the member that stays holds test://a", run)
		require.NoError(t, p.Close())
		busy.Wait()
		testutil.Receive(t, p.Done(), 10*time.Second, "the pool's Done")
	}
}
