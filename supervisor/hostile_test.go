package supervisor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
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
