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

// receivesFrom reports (nil) whether sub gets the events of m's server:
// it asks m for a tools/list_changed and reads until one arrives, asking
// again after each ResubscribedMethod marker (a subscription still moving
// misses an event sent before it is listening on m; the marker follows
// its move). Each read is bounded: a subscription that never reaches m
// fails, it never hangs.
func receivesFrom(t *testing.T, sub *snodo.Subscription, m *Client) error {
	t.Helper()
	emit := func() error {
		_, err := m.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
		return err
	}
	if err := emit(); err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				return fmt.Errorf("the subscription ended: %w", sub.Err())
			}
			switch ev.Method {
			case "notifications/tools/list_changed":
				return nil
			case ResubscribedMethod:
				if err := emit(); err != nil {
					return fmt.Errorf("emit after the marker: %w", err)
				}
			}
		case <-time.After(3 * time.Second):
			return fmt.Errorf("no event from %s within 3s (the subscription is held by %s)", m.s.cfg.name, supervisedOf(sub).Member().s.cfg.name)
		}
	}
}

// Listen racing Shrink: a Listen that picked the member Shrink takes out
// of rotation ends on a member in rotation and gets its events, every
// time; it does not fail, nor stay on the member Shrink closed. Shrink
// takes the first member on a tie, where Listen's scan starts too, so
// most runs put both on it.
func TestPoolListenRacingShrinkEndsOnAMemberInRotation(t *testing.T) {
	cmd, args := testutil.Server(t)
	const runs, listens = 20, 4
	var failed []string
	moved := 0
	for run := range runs {
		p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
		require.NoError(t, err)
		subs := make([]*snodo.Subscription, listens)
		errs := make([]error, listens)
		var shrunk error
		atOnce(listens+1, func(i int) {
			if i == listens {
				shrunk = p.Shrink(1)
				return
			}
			subs[i], errs[i] = p.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
		}, nil)
		require.NoError(t, shrunk)
		stays := p.Members()
		require.Len(t, stays, 1)
		for i := range listens {
			if errs[i] != nil {
				failed = append(failed, fmt.Sprintf("run %d listen %d: Listen failed while the pool lives on: %v", run, i, errs[i]))
				continue
			}
			if err := receivesFrom(t, subs[i], stays[0]); err != nil {
				failed = append(failed, fmt.Sprintf("run %d listen %d: %v", run, i, err))
			}
			moved += supervisedOf(subs[i]).Resubscriptions()
		}
		require.NoError(t, p.Close())
		testutil.Receive(t, p.Done(), 10*time.Second, "the pool's Done")
	}
	t.Logf("%d of %d subscriptions moved off the member Shrink took out", moved, runs*listens)
	if len(failed) > 0 {
		t.Errorf("%d of %d subscriptions were not on a member in rotation after Shrink:\n%v", len(failed), runs*listens, failed)
	}
}

// Listen racing a member's give-up: a Listen that picked the member that
// dies ends on the member that stays and gets its events, every time; it
// does not fail while the pool lives on.
func TestPoolListenRacingAGiveUpEndsOnAMemberInRotation(t *testing.T) {
	cmd, args := testutil.Server(t)
	const runs, listens = 15, 4
	var failed []string
	for run := range runs {
		ev := newEvents()
		p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast, WithIntensity(0, time.Minute), ev.option())
		require.NoError(t, err)
		victim := p.Members()[run%2]
		subs := make([]*snodo.Subscription, listens)
		errs := make([]error, listens)
		atOnce(listens, func(i int) {
			subs[i], errs[i] = p.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
		}, func() { kill(t, victim.serverPID()) })
		stays := afterGiveUp(t, p, ev)
		for i := range listens {
			if errs[i] != nil {
				failed = append(failed, fmt.Sprintf("run %d listen %d: Listen failed while the pool lives on: %v", run, i, errs[i]))
				continue
			}
			if err := receivesFrom(t, subs[i], stays); err != nil {
				failed = append(failed, fmt.Sprintf("run %d listen %d: %v", run, i, err))
			}
		}
		require.NoError(t, p.Close())
		testutil.Receive(t, p.Done(), 10*time.Second, "the pool's Done")
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d subscriptions were not on the member in rotation after a give-up:\n%v", len(failed), runs*listens, failed)
	}
}

// atOnce runs fn(0)…fn(n-1) on goroutines released together, then also
// (when not nil) on the caller's, and returns once every fn has.
func atOnce(n int, fn func(i int), also func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	if also != nil {
		also()
	}
	wg.Wait()
}

// afterGiveUp waits for a member of p, a pool of 2, to give up and leave,
// and returns the member that stays.
func afterGiveUp(t *testing.T, p *Pool, ev events) *Client {
	t.Helper()
	ev.waitFor(t, "gave-up", 5*time.Second)
	testutil.Eventually(t, func() bool { return len(p.Members()) == 1 }, 5*time.Second, "the member that gave up leaves")
	return p.Members()[0]
}
