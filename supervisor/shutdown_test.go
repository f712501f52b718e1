package supervisor

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// A pool owns its servers' whole lives: closed, it leaves none running,
// even servers that ignore both stdin's EOF and SIGTERM. With no option
// given, each gets defaultShutdownGrace to exit after its stdin closes,
// then SIGTERM, then SIGKILL, so Done closes within twice the grace and
// a little.
func TestPoolCloseStopsServersThatIgnoreEOFAndSIGTERM(t *testing.T) {
	cmd, args := testutil.Server(t, "-ignore-eof", "-ignore-sigterm")
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
	require.NoError(t, err)
	var pids []int
	for _, m := range p.Members() {
		pids = append(pids, m.serverPID())
	}
	t0 := time.Now()
	require.NoError(t, p.Close())
	testutil.Receive(t, p.Done(), 2*defaultShutdownGrace+5*time.Second, "the pool's Done")
	t.Logf("Done closed %s after Close (grace %s)", time.Since(t0).Round(time.Millisecond), defaultShutdownGrace)
	for _, pid := range pids {
		testutil.AssertReaped(t, pid, 0)
	}
	testutil.VerifyNone(t)
}

// snodo.WithShutdownGrace(0) opts out: Close only closes the server's
// stdin, as snodo.Client.Close does, and a server that ignores EOF is
// still running past the default grace.
func TestStdinOnlyCloseLeavesAServerIgnoringEOFRunning(t *testing.T) {
	cmd, args := testutil.Server(t, "-ignore-eof")
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, WithConnectOptions(snodo.WithShutdownGrace(0)))
	require.NoError(t, err)
	pid := c.serverPID()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.NoError(t, c.Close())
	select {
	case <-c.Done():
		t.Fatal("the server was stopped though the grace was turned off")
	case <-time.After(defaultShutdownGrace + time.Second):
	}
	assert.True(t, testutil.Running(pid))
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	testutil.Receive(t, c.Done(), 5*time.Second, "Done once the server is killed")
	testutil.VerifyNone(t)
}

// An actor system's Shutdown takes the pools, supervised clients and
// connections on it with it, as their owner's end would: protoactor-go's
// Shutdown stops no actor, snodo's actors watch for it. Servers that
// ignore EOF are signalled after the grace.
func TestSystemShutdownLeavesNoServer(t *testing.T) {
	sys := snodoactor.NewQuietSystem(nil)
	cmd, args := testutil.Server(t)
	stubborn, sargs := testutil.Server(t, "-ignore-eof", "-ignore-sigterm")
	p, err := NewPool(context.Background(), snodo.Command(cmd, args...), 2, fast, WithConnectOptions(snodo.WithActorSystem(sys)))
	require.NoError(t, err)
	c, err := Connect(context.Background(), snodo.Command(stubborn, sargs...), fast, WithConnectOptions(snodo.WithActorSystem(sys)))
	require.NoError(t, err)
	plain, err := snodo.Connect(context.Background(), cmd, args, snodo.WithActorSystem(sys))
	require.NoError(t, err)
	pids := []int{c.serverPID(), plain.ServerPID()}
	for _, m := range p.Members() {
		pids = append(pids, m.serverPID())
	}

	sys.Shutdown()
	testutil.Receive(t, p.Done(), 10*time.Second, "the pool's Done")
	testutil.Receive(t, plain.Done(), 10*time.Second, "the plain client's Done")
	testutil.Receive(t, c.Done(), 2*defaultShutdownGrace+5*time.Second, "the supervised client's Done")
	assert.ErrorIs(t, p.Err(), snodo.ErrOwnerExited)
	assert.ErrorContains(t, p.Err(), "shut down")
	assert.ErrorIs(t, c.Err(), snodo.ErrOwnerExited)
	assert.ErrorIs(t, plain.Err(), snodo.ErrOwnerExited)
	for _, pid := range pids {
		testutil.AssertReaped(t, pid, 0)
	}
	testutil.VerifyNone(t)
}
