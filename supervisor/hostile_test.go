package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// A member that gives up leaves the pool, but its last server is still
// the pool's to reap: one that closed its stdout and ignores EOF and
// SIGTERM is killed (about 1 s), and the pool's Done waits for it, as it
// waits for the servers of the members it closes.
func TestPoolDoneWaitsForTheServerOfAMemberThatGaveUp(t *testing.T) {
	cmd, args := testutil.Server(t, "-ignore-eof", "-ignore-sigterm")
	p, err := NewPool(t.Context(), cmd, args, 1, fast, WithIntensity(0, time.Minute))
	require.NoError(t, err)
	pid := p.Members()[0].ServerPID()
	_, err = p.Request(t.Context(), "test/closeStdout", nil)
	require.ErrorIs(t, err, snodo.ErrConnectionClosed)
	testutil.Receive(t, p.Done(), 10*time.Second, "the pool's Done")
	assert.ErrorIs(t, p.Err(), ErrGaveUp)
	testutil.AssertReaped(t, pid, 0)
	testutil.VerifyNone(t)
}

// A pool's size is bounded by MaxPoolSize, at NewPool, StartPool and
// Grow (the members in rotation and those starting count), before any
// server is started: a wrong size must not fork hundreds of processes.
func TestPoolSizeIsBounded(t *testing.T) {
	cmd, args := testutil.Server(t)
	for _, size := range []int{0, -1, MaxPoolSize + 1, 1 << 30} {
		_, err := NewPool(t.Context(), cmd, args, size)
		require.ErrorContains(t, err, "MaxPoolSize", "size %d", size)
		_, err = StartPool(t.Context(), snodoactor.Shared(), nil, cmd, args, size)
		require.ErrorContains(t, err, "MaxPoolSize", "size %d", size)
	}

	// Members after the first cannot start (they exit at once), so a Grow
	// that started any would show in startedPIDs.
	gate := filepath.Join(t.TempDir(), "gate")
	starts := filepath.Join(t.TempDir(), "start")
	script := `test -e "$1" && exit 3; shift; exec "$@"`
	p, err := NewPool(t.Context(), "sh", append([]string{"-c", script, "sh", gate, cmd}, append(args, "-start-file", starts)...), 2,
		fast, WithIntensity(0, time.Minute))
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	err = p.Grow(MaxPoolSize - 1)
	require.ErrorContains(t, err, "MaxPoolSize")
	assert.Equal(t, 2, p.Size())
	assert.Len(t, startedPIDs(t, starts, 2), 2, "Grow started no member")
	err = p.Grow(1 << 30)
	require.ErrorContains(t, err, "MaxPoolSize")
}
