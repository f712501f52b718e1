package remote

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// A caller killed with SIGKILL in the middle of its calls sends no
// cancel; it stops answering its calls' heartbeats, so the host cancels
// them on the MCP server within about 2 s (3.5 beats of 500 ms), counted
// as cancelled, not as errors. Before, the server worked on until the
// caller's timeout plus a second (or the pool's 60 s without one).
func TestHostCancelsTheCallsOfACallerThatDied(t *testing.T) {
	e := natsServer(t)
	journalFile := filepath.Join(t.TempDir(), "journal")
	cmd, args := testutil.Server(t, "-journal", journalFile)
	p, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := NewHost(bg(), e.URL(), Serve("ts", p))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	s := h.served[0]

	const calls = 5
	var callers []*exec.Cmd
	for range calls {
		c := exec.Command(snodoBin(t), "--nats", e.URL(), "--server", "ts", "--timeout", "60s",
			"request", "test/sleep", `{"ms":60000,"honorCancel":true}`)
		require.NoError(t, c.Start())
		callers = append(callers, c)
	}
	testutil.Eventually(t, func() bool { return s.inFlight.Load() == calls }, 30*time.Second, "the host holds every call")
	for _, c := range callers {
		require.NoError(t, c.Process.Signal(syscall.SIGKILL))
	}
	killed := time.Now()
	for _, c := range callers {
		_ = c.Wait()
	}
	testutil.Eventually(t, func() bool { return s.inFlight.Load() == 0 }, 20*time.Second, "the host let go of the orphaned calls")
	took := time.Since(killed)
	t.Logf("the host cancelled the orphaned calls %v after their caller died", took.Round(10*time.Millisecond))
	testutil.Eventually(t, func() bool {
		return count(journal(t, journalFile), "notification", "notifications/cancelled") == calls
	}, 10*time.Second, "the MCP server got a notifications/cancelled per call")
	assert.EqualValues(t, calls, s.cancels.Load(), "counted as cancelled")
	assert.Zero(t, s.callStats.snapshot("call", "", "", nil).NumErrors, "not as errors")
}
