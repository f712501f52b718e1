package remote

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// A full host loses nothing when another can take its calls: host A
// holds at most 2 calls, host B has no such bound, and 200 calls of 1 s
// made at once all succeed, each refused call sent next to B, which has
// room (before, 5 sends at random lost a few in every run; then retries
// with back-off went back to A as often as not).
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

	require.Zero(t, burst(t, c, 200), "calls lost")
	// A refused call goes next to B, which has room, not back to the
	// queue group: A refuses about the half of the first sends NATS gives
	// it, and few more. Before, each retry landed on A as often as not
	// (188 refusals in a run).
	st := a.served[0].callStats.snapshot("call", "", "", nil)
	t.Logf("host A: %d requests, %d refused", st.NumRequests, st.NumErrors)
	assert.Less(t, st.NumErrors, 150, "retries went back to the full host")
}

// The same with two `snodo node` processes: node A serves with
// --max-held 2, node B with the default bound, both on one nats-server,
// and 200 calls of 1 s made at once all succeed (the set-up; a
// refused call is not run, so the caller sends it to the node with room).
func TestRefusedCallsReachTheNodeWithRoom(t *testing.T) {
	e := natsServer(t)
	cfg := writeConfig(t, "ts")
	a := startNode(t, e.URL(), cfg, "--max-held", "2")
	b := startNode(t, e.URL(), cfg)
	c := client(t, e, "ts", WithHeartbeat(2*time.Second)) // as above: beats are not what this is about
	owners := ownerOf(a, b)

	require.Zero(t, burst(t, c, 200), "calls lost")
	seen := map[*node]int{}
	for range 20 {
		seen[owners[serverPID(t, c)]]++
	}
	t.Logf("after the burst, of 20 calls: node A %d, node B %d", seen[a], seen[b])
}

// burst makes n calls of 1 s on c at once and returns how many failed,
// logging each failure.
func burst(t *testing.T, c *Client, n int) (failed int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := c.Request(ctxFor(t, 60*time.Second), "test/sleep", map[string]any{"ms": 1000})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			failed++
			t.Log(err)
		}
	}
	return failed
}
