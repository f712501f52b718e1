package remote

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// A full host loses nothing when another can take its calls: host A
// holds at most 2 calls, host B has no such bound, and 200 calls of 1 s
// made at once all succeed (retried with back-off and jitter while A
// refuses them; before, 5 sends at random lost a few in every run).
func TestRefusedCallsAreRetriedUntilAHostTakesThem(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t)
	pa, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	a, err := NewHost(bg(), e.URL(), Serve("ts", pa), WithMaxHeld(2))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	host(t, e, "ts", 1)
	// A long heartbeat: 200 calls under -race on a loaded machine can
	// hold up 500 ms beats past their 1.75 s watch, which is not what
	// this test is about.
	c := client(t, e, "ts", WithHeartbeat(2*time.Second))

	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Go(func() {
			_, err := c.Request(ctxFor(t, 60*time.Second), "test/sleep", map[string]any{"ms": 1000})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			t.Log(err)
		}
	}
	require.Zero(t, failed, "calls lost")
}
