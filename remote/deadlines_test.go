package remote

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// A client's calls share one deadline timer. A call whose deadline comes
// before the one the timer is set for still times out on time, calls
// with later deadlines carry on, and the timer ticks each call whose
// deadline came, once, whatever order the deadlines were set in.
func TestCallsShareOneDeadlineTimer(t *testing.T) {
	e := natsServer(t)
	host(t, e, "slow", 3)
	c := client(t, e, "slow")
	ctx := ctxFor(t, 30*time.Second)

	long := make(chan error, 1)
	go func() { // sets the timer first, for its 20 s
		_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 1500}, snodo.Timeout(20*time.Second))
		long <- err
	}()
	testutil.Eventually(t, func() bool { return c.deadlines.at.Load() != 0 }, 5*time.Second, "the long call set the timer")

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, timeout := range []time.Duration{300 * time.Millisecond, 150 * time.Millisecond} {
		wg.Go(func() {
			_, errs[i] = c.Request(ctx, "test/sleep", map[string]any{"ms": 10000, "honorCancel": true}, snodo.Timeout(timeout))
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, snodo.ErrTimeout, "a sooner deadline set the timer sooner")
	}
	require.NoError(t, <-long, "the long call was not ticked early")

	raw, err := c.Request(ctx, "test/echo", map[string]int{"after": 1})
	require.NoError(t, err)
	var echoed struct{ After int }
	require.NoError(t, json.Unmarshal(raw, &echoed))
	assert.Equal(t, 1, echoed.After, "the client's calls go on after ticks")

	require.NoError(t, c.Close())
	assert.Zero(t, c.deadlines.at.Load(), "Close stops the timer")
	c.due(getPending(), time.Now().Add(time.Hour).UnixNano())
	assert.Zero(t, c.deadlines.at.Load(), "and it is never set again")
}
