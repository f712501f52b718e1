package supervisor

import (
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// A call made right after its server was killed, once the server is dead
// (so it cannot have read the call) but usually before the supervisor has
// seen it, reaches the dead server's connection: its -32000 wraps
// snodo.ErrNotSent, and the call goes to the restarted server (supervised
// client) or another member (pool) although it is not Idempotent. Every
// call succeeds.
func TestCallToAJustKilledServerGoesToTheNext(t *testing.T) {
	cmd, args := testutil.Server(t)
	const calls = 25
	for _, size := range []int{0, 1, 2} { // 0: a supervised client
		rec := &testutil.LogRecorder{}
		opts := []Option{fast, WithIntensity(1000, time.Minute), WithConnectOptions(snodo.WithLogger(rec.Logger()))}
		var r snodo.Session
		var members func() []*Client
		if size == 0 {
			c, err := Connect(t.Context(), snodo.Command(cmd, args...), opts...)
			require.NoError(t, err)
			defer c.Close()
			r, members = c, func() []*Client { return []*Client{c} }
		} else {
			p, err := NewPool(t.Context(), snodo.Command(cmd, args...), size, opts...)
			require.NoError(t, err)
			defer p.Close()
			r, members = p, p.Members
		}
		for i := range calls {
			var pids []int
			for _, m := range members() {
				testutil.Eventually(t, func() bool {
					c := m.Current()
					return c != nil && c.Err() == nil && testutil.Running(m.serverPID())
				}, 10*time.Second, "the member's server is up")
				pids = append(pids, m.serverPID())
			}
			for _, pid := range pids {
				kill(t, pid)
			}
			for _, pid := range pids {
				awaitDead(t, pid)
			}
			_, err := r.Request(t.Context(), "test/echo", map[string]int{"i": i})
			require.NoError(t, err, "size %d, call %d", size, i)
		}
		t.Logf("size %d: %d of %d calls met a connection whose server had died unseen and moved",
			size, rec.Count("went away without reading the call"), calls)
	}
}

// A call the server read and died of is not sent again unless it is
// Idempotent: its -32000 wraps the exit, not snodo.ErrNotSent.
func TestCallTheServerDiedOfIsNotSentAgain(t *testing.T) {
	cmd, args := testutil.Server(t)
	for _, size := range []int{0, 2} { // 0: a supervised client
		var r snodo.Session
		if size == 0 {
			c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
			require.NoError(t, err)
			defer c.Close()
			r = c
		} else {
			p, err := NewPool(t.Context(), snodo.Command(cmd, args...), size, fast)
			require.NoError(t, err)
			defer p.Close()
			r = p
		}
		_, err := r.Request(t.Context(), "test/crash", map[string]int{"code": 3})
		var e *snodo.Error
		require.ErrorAs(t, err, &e, "size %d", size)
		require.Equal(t, snodo.CodeConnectionClosed, e.Code, err.Error())
		require.ErrorIs(t, err, snodo.ErrServerExited)
		require.False(t, errors.Is(err, snodo.ErrNotSent), "size %d: %v", size, err)
	}
}

// awaitDead waits until pid has died with every thread (a zombie with no
// thread left but its main one, or reaped): nothing can read its stdin
// any more. A zombie alone is not enough: the main thread of a killed Go
// process turns zombie, and its descriptors leave /proc, while its other
// threads are still exiting, and one of them may still take what is
// written to the pipe. It polls finely, so that the caller still acts
// before the supervisor has seen the death.
func awaitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.Running(pid) || otherThreads(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("server %d still running 10 s after SIGKILL", pid)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// otherThreads reports whether threads of pid other than its main one
// are still there (exiting, they may still hold its descriptors).
func otherThreads(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return err == nil && len(tasks) > 1
}
