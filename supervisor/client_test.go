package supervisor

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

func TestRestartAfterKill(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option())
	require.NoError(t, err)
	first := ev.waitFor(t, "connected", time.Second)
	old := c.serverPID()
	assert.Equal(t, old, first.ServerPID)

	kill(t, old)
	exited := ev.waitFor(t, "exited", 5*time.Second)
	assert.ErrorIs(t, exited.Err, snodo.ErrServerExited)
	assert.Contains(t, exited.Err.Error(), "killed by signal")
	assert.Equal(t, old, exited.ServerPID, "Exited names the process that died")
	back := ev.waitFor(t, "connected", 5*time.Second)
	assert.NotEqual(t, old, back.ServerPID)
	assert.Equal(t, 1, back.Total)
	assert.Equal(t, 1, back.Restarts, "Connected after a restart counts it")
	t.Logf("restart latency (exit seen → new server answering): %s", back.Downtime)

	res, err := c.CallTool(t.Context(), "echo", map[string]string{"message": "again"})
	require.NoError(t, err)
	assert.Equal(t, "again", res.Text())
	assert.Equal(t, 1, c.Restarts())

	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.Err(), snodo.ErrClosed)
	testutil.AssertReaped(t, old, 5*time.Second)
	testutil.AssertReaped(t, back.ServerPID, 5*time.Second)
	_, err = c.Request(t.Context(), "test/echo", nil)
	assert.ErrorIs(t, err, snodo.ErrConnectionClosed)
	assert.ErrorIs(t, err, snodo.ErrClosed)
	stopped := ev.waitFor(t, "stopped", time.Second)
	assert.Equal(t, 1, stopped.Restarts, "the restart is still inside the window as supervision stops")
	assert.Equal(t, 1, stopped.Total)
}

// A server that closes its stdout and lives on, ignoring EOF and SIGTERM,
// is replaced; the supervisor signals the abandoned process (SIGKILL at
// about 1 s) rather than leave it running beside its replacement with a
// Done that never closes.
func TestAbandonedServerIgnoringEOFIsKilled(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t, "-ignore-eof", "-ignore-sigterm")
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option())
	require.NoError(t, err)
	old := ev.waitFor(t, "connected", 5*time.Second).ServerPID

	_, err = c.Request(t.Context(), "test/closeStdout", nil)
	assert.ErrorIs(t, err, snodo.ErrStdoutClosed, "the call fails as its server goes away")
	exited := ev.waitFor(t, "exited", 5*time.Second)
	assert.ErrorIs(t, exited.Err, snodo.ErrStdoutClosed)
	back := ev.waitFor(t, "connected", 5*time.Second)
	assert.NotEqual(t, old, back.ServerPID)
	testutil.AssertReaped(t, old, 5*time.Second)

	// Closed by hand, a server is not signalled (Close never does): the
	// replacement, ignoring EOF too, is ended with Kill.
	current := c.Current()
	c.s.mu.Lock()
	kill := c.s.live[current] // what the connection lent (connopts.Lent)
	c.s.mu.Unlock()
	kill()
	require.NoError(t, c.Close())
	testutil.AssertReaped(t, back.ServerPID, 5*time.Second)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done did not close")
	}
}

func TestGiveUpWhenTheServerCrashesAtStart(t *testing.T) {
	ev := newEvents()
	t0 := time.Now()
	// It reads the first request before exiting: a server that is gone
	// before snodo's first write shows up as "server closed its stdin"
	// instead (see the package tests' notes in docs/supervision.md).
	_, err := Connect(t.Context(), snodo.Command("sh", "-c", "read line; exit 3"),
		fast, WithIntensity(3, 10*time.Second), ev.option())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrGaveUp)
	assert.ErrorIs(t, err, snodo.ErrServerExited)
	assert.Contains(t, err.Error(), "gave up after 3 restarts in 10s: server exited with status 3")
	var gu *gaveUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, 3, gu.Restarts)
	n := 0
	for len(ev) > 0 {
		if (<-ev).Kind == "exited" {
			n++
		}
	}
	assert.Equal(t, 3, n, "three restarts before giving up")
	t.Logf("gave up after %s", time.Since(t0))
	assert.Empty(t, testutil.ChildPIDs(), "no server left behind")
}

func TestCommandThatCannotStartFailsAtOnce(t *testing.T) {
	t0 := time.Now()
	_, err := Connect(t.Context(), snodo.Command("snodo-no-such-command"), fast)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "executable file not found")
	assert.NotErrorIs(t, err, ErrGaveUp)
	assert.Less(t, time.Since(t0), time.Second)
}

// A server that works once and then crashes at every start: supervision
// gives up, callers learn why.
func TestGiveUpAfterRunning(t *testing.T) {
	server, _ := testutil.Server(t)
	state := filepath.Join(t.TempDir(), "started")
	script := `if [ -e "$1" ]; then echo "cannot start twice" >&2; read line; exit 3; fi; touch "$1"; exec "$2"`
	ev := newEvents()
	c, err := Connect(t.Context(), snodo.Command("sh", "-c", script, "sh", state, server),
		fast, WithIntensity(2, 10*time.Second), ev.option(),
		WithConnectOptions(snodo.WithStderr(new(discard))))
	require.NoError(t, err)
	pid := c.serverPID()
	kill(t, pid)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("supervision did not give up")
	}
	assert.ErrorIs(t, c.Err(), ErrGaveUp)
	assert.Contains(t, c.Err().Error(), "gave up after 2 restarts in 10s: server exited with status 3 (last stderr: cannot start twice)")
	_, err = c.Request(t.Context(), "test/echo", nil)
	assert.ErrorIs(t, err, ErrGaveUp)
	var e *snodo.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, snodo.CodeConnectionClosed, e.Code)
	assert.Equal(t, "gave-up", ev.waitFor(t, "gave-up", time.Second).Kind)
	testutil.AssertReaped(t, pid, 5*time.Second)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestInFlightCallFailsAndIsNotRetried(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option())
	require.NoError(t, err)
	defer c.Close()

	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(t.Context(), "test/sleep", map[string]int{"ms": 5000, "k": 1})
		errc <- err
	}()
	waitReceived(t, c, 1)
	kill(t, c.serverPID())
	err = <-errc
	var e *snodo.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, snodo.CodeConnectionClosed, e.Code)
	assert.ErrorIs(t, err, snodo.ErrServerExited)

	ev.waitFor(t, "connected", time.Second)
	ev.waitFor(t, "connected", 5*time.Second)
	raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": "test/sleep"})
	require.NoError(t, err)
	assert.Empty(t, sleepCalls(t, raw), "the new server never saw the call")
}

func TestIdempotentCallIsRetriedOnce(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option())
	require.NoError(t, err)
	defer c.Close()
	ev.waitFor(t, "connected", time.Second)

	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, err := c.Request(t.Context(), "test/sleep", map[string]int{"ms": 300, "k": 7}, snodo.Idempotent())
		done <- result{err}
	}()
	waitReceived(t, c, 1)
	kill(t, c.serverPID())
	r := <-done
	require.NoError(t, r.err, "retried on the restarted server")
	raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": "test/sleep"})
	require.NoError(t, err)
	assert.Equal(t, []int{7}, sleepCalls(t, raw), "sent once to the new server")
}

func TestFailFastDuringRestart(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	slow := WithBackoff(Backoff{Initial: time.Second, Max: time.Second, Multiplier: 1})
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), slow, FailFast(), ev.option())
	require.NoError(t, err)
	defer c.Close()
	kill(t, c.serverPID())
	ev.waitFor(t, "exited", 5*time.Second)
	t0 := time.Now()
	_, err = c.Request(t.Context(), "test/echo", nil)
	assert.Less(t, time.Since(t0), 50*time.Millisecond, "fails at once")
	assert.ErrorIs(t, err, ErrRestarting)
	assert.ErrorIs(t, err, snodo.ErrConnectionClosed)
	assert.Contains(t, err.Error(), "killed by signal")
	var e *snodo.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, snodo.CodeConnectionClosed, e.Code)
	ev.waitFor(t, "connected", 5*time.Second)
	_, err = c.Request(t.Context(), "test/echo", nil)
	assert.NoError(t, err)
}

func TestWaitDuringRestart(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	slow := WithBackoff(Backoff{Initial: 300 * time.Millisecond, Max: 300 * time.Millisecond, Multiplier: 1})
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), slow, ev.option())
	require.NoError(t, err)
	defer c.Close()
	kill(t, c.serverPID())
	ev.waitFor(t, "exited", 5*time.Second)

	// Its own timeout is shorter than the restart: -32001, never sent.
	_, err = c.Request(t.Context(), "test/echo", nil, snodo.Timeout(50*time.Millisecond))
	assert.ErrorIs(t, err, ErrRestarting)
	assert.ErrorIs(t, err, snodo.ErrTimeout)
	// Enough time: it waits and succeeds on the new server.
	t0 := time.Now()
	raw, err := c.Request(t.Context(), "test/echo", map[string]int{"x": 1}, snodo.Timeout(5*time.Second))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"x":1`)
	t.Logf("call waited %s for the restart", time.Since(t0))
	// ctx bounds the wait too.
	kill(t, c.serverPID())
	ev.waitFor(t, "exited", 5*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = c.Request(ctx, "test/echo", nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestOwnerContextEndsSupervision(t *testing.T) {
	cmd, args := testutil.Server(t)
	ctx, cancel := context.WithCancel(t.Context())
	c, err := Connect(ctx, snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	pid := c.serverPID()
	cancel()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not done after the owner context ended")
	}
	assert.ErrorIs(t, c.Err(), snodo.ErrOwnerExited)
	assert.Zero(t, c.Restarts())
	testutil.AssertReaped(t, pid, 5*time.Second)
}

func TestOptionsValidate(t *testing.T) {
	for _, opt := range []Option{
		WithIntensity(-1, time.Second), WithIntensity(1, 0),
		WithBackoff(Backoff{}), WithBackoff(Backoff{Initial: time.Second, Max: time.Millisecond, Multiplier: 2}),
		WithBackoff(Backoff{Initial: 1, Max: 2, Multiplier: 0.5}), WithBackoff(Backoff{Initial: 1, Max: 2, Multiplier: 2, Jitter: 2}),
		WithMaxWait(0), WithEventHandler(nil), WithEventsTo(nil),
		WithConnectOptions(snodo.WithOwner(nil)), WithConnectOptions(snodo.WithActorSystem(nil)),
		WithConnectOptions(snodo.WithOrigin(snodo.Origin{Server: "s", Member: "m"})),
	} {
		_, err := Connect(t.Context(), snodo.Command("true"), opt)
		assert.Error(t, err)
	}
	_, err := NewPool(t.Context(), snodo.Command("true"), 0)
	assert.Error(t, err)

	// Nil arguments are errors that say what to pass, never panics.
	var unset Option
	_, err = Connect(t.Context(), snodo.Command("true"), fast, unset)
	assert.ErrorContains(t, err, "option 2 is nil")
	sys := snodoactor.Shared()
	gone := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	testutil.StopActor(t, sys, gone, 5*time.Second)
	_, err = Connect(t.Context(), snodo.Command("true"), WithEventsTo(gone))
	assert.ErrorContains(t, err, "WithEventsTo")
	//lint:ignore SA1012 the point of the test
	_, err = Connect(nil, snodo.Command("true")) //nolint:staticcheck
	assert.ErrorContains(t, err, "nil context")
	//lint:ignore SA1012 the point of the test
	_, err = NewPool(nil, snodo.Command("true"), 1) //nolint:staticcheck
	assert.ErrorContains(t, err, "nil context")
	//lint:ignore SA1012 the point of the test
	_, err = StartPool(nil, snodoactor.Shared(), nil, snodo.Command("true"), 1) //nolint:staticcheck
	assert.ErrorContains(t, err, "nil context")
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}
	assert.Equal(t, 100*time.Millisecond, b.delay(1))
	assert.Equal(t, 200*time.Millisecond, b.delay(2))
	assert.Equal(t, 400*time.Millisecond, b.delay(3))
	assert.Equal(t, time.Second, b.delay(10))
	b.Jitter = 0.5
	for range 100 {
		d := b.delay(2)
		assert.True(t, d >= 100*time.Millisecond && d <= 300*time.Millisecond, d)
	}
	in := intensity{max: 2, window: time.Second}
	t0 := time.Now()
	assert.Equal(t, 1, in.add(t0))
	assert.Equal(t, 2, in.add(t0.Add(100*time.Millisecond)))
	assert.True(t, in.exceeded(in.add(t0.Add(200*time.Millisecond))))
	assert.Equal(t, 1, in.add(t0.Add(5*time.Second)), "old restarts leave the window")
}

// waitReceived waits until the current server has received n test/sleep
// calls.
func waitReceived(t *testing.T, c *Client, n int) {
	t.Helper()
	testutil.Eventually(t, func() bool {
		raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": "test/sleep"})
		return err == nil && len(sleepCalls(t, raw)) == n
	}, 2*time.Second, "call in flight on the server")
}

// A WithEventHandler that panics stops supervision, as its doc says, and
// the server with it.
func TestEventHandlerPanicStopsSupervision(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), WithEventHandler(func(ev LifecycleEvent) {
		if ev.Kind == "connected" {
			panic("boom")
		}
	}))
	if err == nil {
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("supervision goes on after its event handler panicked")
		}
		err = c.Err()
	}
	require.ErrorIs(t, err, snodo.ErrActorPanicked)
}
