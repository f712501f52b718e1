package supervisor

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// A server that breaks its memory limit is restarted like any other that
// went away: each exit names the limit (event, log), and the restart
// intensity counts these exits, so the fourth break gives up.
func TestSandboxMemoryBreaksRestart(t *testing.T) {
	ev := newEvents()
	var logs testutil.LogRecorder
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option(), WithIntensity(3, time.Minute),
		WithConnectOptions(snodo.WithSandbox(snodo.Sandbox{MemoryBytes: 48 << 20}), snodo.WithLogger(logs.Logger())))
	var se *snodo.SandboxError
	if errors.As(err, &se) && se.Err != nil {
		t.Skipf("this machine cannot set up the sandbox: %v", err)
	}
	require.NoError(t, err)
	defer c.Close()
	ev.waitFor(t, "connected", 5*time.Second)
	for i := 1; i <= 4; i++ {
		_, err := c.CallTool(t.Context(), "alloc", map[string]int{"mb": 256})
		require.ErrorAs(t, err, &se, "break %d: the call's -32000 wraps the sandbox error", i)
		assert.Equal(t, "memory", se.Limit)
		if i == 4 {
			break
		}
		exited := ev.waitFor(t, "exited", 10*time.Second)
		require.ErrorAs(t, exited.Err, &se, "break %d: the exited event", i)
		assert.Equal(t, "memory", se.Limit)
		assert.Contains(t, exited.Err.Error(), "memory limit of 48 MiB")
		back := ev.waitFor(t, "connected", 10*time.Second)
		assert.Equal(t, i, back.Total, "break %d: restarted", i)
	}
	gaveUp := ev.waitFor(t, "gave-up", 10*time.Second)
	assert.ErrorIs(t, gaveUp.Err, ErrGaveUp, "the fourth break passes the intensity (3 a minute)")
	require.ErrorAs(t, gaveUp.Err, &se)
	assert.Equal(t, "memory", se.Limit)
	testutil.Receive(t, c.Done(), 10*time.Second, "Done after giving up")
	assert.Equal(t, 3, c.Restarts())
	assert.GreaterOrEqual(t, logs.Count("sandbox_limit=memory"), 3, "each restart's log record names the limit")
}

// A pool member that breaks its sandbox's memory limit is restarted, its
// event naming the limit, while the other member answers.
func TestSandboxPoolMemberRestarts(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast, ev.option(),
		WithConnectOptions(snodo.WithSandbox(snodo.Sandbox{MemoryBytes: 48 << 20})))
	var se *snodo.SandboxError
	if errors.As(err, &se) && se.Err != nil {
		t.Skipf("this machine cannot set up the sandbox: %v", err)
	}
	require.NoError(t, err)
	defer p.Close()
	victim := p.Members()[0]
	_, err = victim.CallTool(t.Context(), "alloc", map[string]int{"mb": 256})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "memory", se.Limit)
	exited := ev.waitFor(t, "exited", 10*time.Second)
	require.ErrorAs(t, exited.Err, &se)
	assert.Equal(t, "memory", se.Limit)
	assert.Contains(t, exited.Member, "#", "the event names the pool member")
	back := ev.waitFor(t, "connected", 10*time.Second)
	assert.Equal(t, 1, back.Total)
	res, err := p.CallTool(t.Context(), "echo", map[string]string{"message": "pool"})
	require.NoError(t, err)
	assert.Equal(t, "pool", res.Text())
}
