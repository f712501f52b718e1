package remote

import (
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// hostsOf lists the host ids Discover finds for name.
func hostsOf(t *testing.T, c *Client, name string) []string {
	t.Helper()
	served, err := Discover(ctxFor(t, 5*time.Second), c.nc, "")
	require.NoError(t, err)
	var ids []string
	for _, s := range served {
		if s.Name == name {
			for _, h := range s.Hosts {
				ids = append(ids, h.ID)
			}
		}
	}
	return ids
}

// A host whose pool gave up withdraws the name: discovery no longer lists
// it, the calls go to the healthy host, and it says so in its log.
func TestHostWhosePoolGaveUpWithdrawsTheName(t *testing.T) {
	e := natsServer(t)
	var logs testutil.Buffer
	cmd, args := testutil.Server(t)
	weak, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1, supervisor.WithIntensity(1, time.Minute))
	require.NoError(t, err)
	a, err := NewHost(bg(), e.URL(), Serve("ts", weak), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	b := host(t, e, "ts", 1)
	c := client(t, e, "ts")
	require.ElementsMatch(t, []string{a.ID(), b.ID()}, hostsOf(t, c, "ts"))

	// Its server exits twice: one restart is allowed, then it gives up.
	for range 2 {
		_, _ = weak.Request(ctxFor(t, 10*time.Second), "test/crash", nil)
		testutil.Eventually(t, func() bool {
			_, err := weak.Request(ctxFor(t, 10*time.Second), "test/echo", nil)
			return err == nil || weak.Err() != nil
		}, 20*time.Second, "the server restarted or the pool gave up")
	}
	require.ErrorIs(t, weak.Err(), supervisor.ErrGaveUp)

	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			_, err := c.Request(ctxFor(t, 30*time.Second), "test/echo", nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "a call must go to the healthy host")
	}
	testutil.Eventually(t, func() bool {
		ids := hostsOf(t, c, "ts")
		return len(ids) == 1 && ids[0] == b.ID()
	}, 10*time.Second, "discovery lists only the healthy host")
	assert.Contains(t, logs.String(), "withdrew a name its pool cannot serve")
	assert.Contains(t, logs.String(), "gave up")
	st := a.poolState(a.served[0])
	assert.False(t, st.Serving)
	assert.Equal(t, 1, st.GivenUp)
}

// A name nobody serves (a misspelt one, say) fails at once, saying so:
// not as a closed connection, since none was lost.
func TestNoHostErrorSaysSo(t *testing.T) {
	e := natsServer(t)
	host(t, e, "ts", 1)
	bin := snodoBin(t) // built before the clock starts
	t0 := time.Now()
	out, err := exec.Command(bin, "--nats", e.URL(), "--server", "tss", "tools").CombinedOutput()
	require.Error(t, err)
	assert.Less(t, time.Since(t0), 5*time.Second)
	assert.True(t, strings.HasPrefix(string(out), `snodo: no host serves "tss"`), "%s", out)
	assert.NotContains(t, string(out), "connection closed")
}
