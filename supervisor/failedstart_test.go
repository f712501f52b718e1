package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// startedPIDs reads the process ids the test servers started with
// -start-file path wrote, n of them, and SIGKILLs any still running when
// the test ends (so a failing test leaves no server behind).
func startedPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	pids := make([]int, 0, n)
	for k := 1; k <= n; k++ {
		b, err := os.ReadFile(path + "." + strconv.Itoa(k))
		require.NoError(t, err, "start %d", k)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	_, err := os.Stat(path + "." + strconv.Itoa(n+1))
	require.ErrorIs(t, err, os.ErrNotExist, "more than %d servers were started", n)
	t.Cleanup(func() {
		for _, pid := range pids {
			if testutil.Running(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return pids
}

// A NewPool that fails leaves nothing running, as a failed snodo.Connect
// does: the members that had connected are stopped for good (stdin
// closed, then SIGTERM and SIGKILL to their process groups), so servers
// that ignore stdin's EOF are reaped before NewPool returns its error.
func TestFailedNewPoolReapsServersThatIgnoreEOF(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "start")
	cmd, args := testutil.Server(t, "-ignore-eof", "-start-file", starts, "-refuse-after", "2")
	t0 := time.Now()
	_, err := NewPool(t.Context(), snodo.Command(cmd, args...), 3, fast)
	require.ErrorContains(t, err, "refused")
	t.Logf("NewPool failed after %s", time.Since(t0))
	for _, pid := range startedPIDs(t, starts, 3) {
		testutil.AssertReaped(t, pid, 0)
	}
	testutil.VerifyNone(t)
}

// The same for StartPool: by the time its *PoolReady carries the error,
// every server it started is reaped, and Done is closed.
func TestFailedStartPoolReapsServersThatIgnoreEOF(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "start")
	cmd, args := testutil.Server(t, "-ignore-eof", "-start-file", starts, "-refuse-after", "2")
	sys := snodoactor.Shared()
	ready := make(chan *PoolReady, 1)
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if r, ok := ctx.Message().(*PoolReady); ok {
			ready <- r
		}
	}))
	p, err := StartPool(t.Context(), sys, owner, snodo.Command(cmd, args...), 3, fast)
	require.NoError(t, err)
	r := testutil.Receive(t, ready, 10*time.Second, "the pool's readiness")
	require.ErrorContains(t, r.Err, "refused")
	for _, pid := range startedPIDs(t, starts, 3) {
		testutil.AssertReaped(t, pid, 0)
	}
	testutil.Receive(t, p.Done(), time.Second, "the failed pool's Done")
	testutil.StopActor(t, sys, owner, time.Second)
	testutil.VerifyNone(t)
}
