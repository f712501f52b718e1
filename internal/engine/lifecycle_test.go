package engine

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/exitsig"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// inFlight starts n slow requests and returns their errors' channel once
// all are registered.
func inFlight(t *testing.T, c *Conn, n int) <-chan error {
	t.Helper()
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, err := c.Request(context.Background(), "test/sleep", map[string]int{"ms": 30000}, nil)
			errs <- err
		}()
	}
	testutil.Eventually(t, func() bool { return c.inFlight() == n }, 10*time.Second, "requests in flight")
	return errs
}

func collect(t *testing.T, errs <-chan error, n int) []error {
	t.Helper()
	var out []error
	for i := 0; i < n; i++ {
		select {
		case err := <-errs:
			out = append(out, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d callers answered", i, n)
		}
	}
	return out
}

// quickEOF makes the test server give up on its in-flight requests soon
// after stdin closes, so tests that leave requests hanging end quickly.
const quickEOF = "-eof-grace=100ms"

func TestServerExitFailsEveryCallerWithStatusAndStderr(t *testing.T) {
	var stderr strings.Builder
	var mu sync.Mutex
	c := start(t, Config{Stderr: writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })})
	errs := inFlight(t, c, 5)
	_, err := c.Request(context.Background(), "test/crash", map[string]any{"code": 3, "stderr": "fatal: disk on fire"}, nil)
	all := append(collect(t, errs, 5), err)
	for _, err := range all {
		e := requireClosed(t, err, sentinel.ErrServerExited)
		assert.Contains(t, e.Message, "status 3")
		assert.Contains(t, e.Message, "disk on fire")
	}
	_, err = c.Request(context.Background(), "test/echo", nil, nil)
	requireClosed(t, err, sentinel.ErrServerExited)
	require.Error(t, c.Notify(context.Background(), "notifications/x", nil))
	waitDone(t, c)
	// Err wraps the server's exit error too: its status is one errors.As away.
	var exit *exec.ExitError
	require.ErrorAs(t, c.Err(), &exit)
	assert.Equal(t, 3, exit.ExitCode())
	require.ErrorIs(t, c.Err(), sentinel.ErrServerExited)
}

// The server's last stderr lines, quoted in the error every caller gets,
// are the server's choice: escape sequences in them are shown as text
// (\x1b…) and invalid UTF-8 as U+FFFD, so that an error a caller logs or
// prints cannot recolour, retitle or rewrite a terminal. What reaches the
// caller's WithStderr writer is the server's bytes as sent.
func TestStderrInErrorsCannotDriveATerminal(t *testing.T) {
	var stderr testutil.Buffer
	c := start(t, Config{Stderr: &stderr})
	raw := []byte("\x1b]0;pwned\x07\x1b[2J\x1b[31mfatal\x1b[0m \u009b1A\r over \xff\xfe tab\tok")
	_, err := c.Request(context.Background(), "test/crash", map[string]any{"code": 3, "stderrBytes": raw}, nil)
	e := requireClosed(t, err, sentinel.ErrServerExited)
	want := `last stderr: \x1b]0;pwned\x07\x1b[2J\x1b[31mfatal\x1b[0m \x9b1A\x0d over ` + "\ufffd\ufffd tab\tok)"
	assert.Contains(t, e.Message, want)
	for _, msg := range []string{err.Error(), c.Err().Error()} {
		assert.NotContains(t, msg, "\x1b", "a raw ESC")
		assert.NotContains(t, msg, "\u009b", "a raw CSI")
		assert.NotContains(t, msg, "\r")
		assert.True(t, utf8.ValidString(msg), "%q", msg)
	}
	waitDone(t, c)
	assert.Contains(t, stderr.String(), string(raw), "the writer gets the bytes as sent")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestServerKilledBySignal(t *testing.T) {
	c := start(t, Config{})
	_, err := c.Request(context.Background(), "test/crash", map[string]any{"signal": "SIGKILL"}, nil)
	e := requireClosed(t, err, sentinel.ErrServerExited)
	assert.Contains(t, e.Message, "signal 9")
}

func TestServerClosingStdinFailsWrites(t *testing.T) {
	c := start(t, Config{}, quickEOF)
	errs := inFlight(t, c, 3)
	mustCall(t, c, "test/closeStdin", nil)
	// The server no longer reads: the next write fails with EPIPE.
	var err error
	testutil.Eventually(t, func() bool {
		_, err = c.Request(context.Background(), "test/echo", nil, &CallOptions{Timeout: time.Second})
		return err != nil && errors.Is(err, jsonrpc.ErrConnectionClosed)
	}, 10*time.Second, "write to a closed stdin fails")
	requireClosed(t, err, sentinel.ErrStdinClosed)
	for _, err := range collect(t, errs, 3) {
		requireClosed(t, err, sentinel.ErrStdinClosed)
	}
	killServer(t, c) // it lingers 30 s after closing its stdin
}

// killServer ends a test server scripted to linger.
func killServer(t *testing.T, c *Conn) {
	t.Helper()
	require.NoError(t, syscall.Kill(c.processID(), syscall.SIGKILL))
	waitDone(t, c)
}

func TestServerClosingStdoutWhileAlive(t *testing.T) {
	c := start(t, Config{}, quickEOF)
	errs := inFlight(t, c, 3)
	_, err := c.Request(context.Background(), "test/closeStdout", nil, nil)
	e := requireClosed(t, err, sentinel.ErrStdoutClosed)
	assert.Contains(t, e.Message, "still running")
	for _, err := range collect(t, errs, 3) {
		requireClosed(t, err, sentinel.ErrStdoutClosed)
	}
	// Stdin was closed by the stop, so the server exits at EOF and is reaped.
	waitDone(t, c)
}

func TestOwnerContextDoneClosesTheConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd, args := testutil.Server(t)
	c, err := Start(ctx, Config{Command: cmd, Args: append(args, quickEOF)})
	require.NoError(t, err)
	errs := inFlight(t, c, 2)
	cancel()
	for _, err := range collect(t, errs, 2) {
		requireClosed(t, err, sentinel.ErrOwnerExited)
	}
	waitDone(t, c)
	testutil.AssertReaped(t, c.processID(), 10*time.Second)
}

func TestOwnerActorTerminatedClosesTheConnection(t *testing.T) {
	sys := snodoactor.Shared()
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	c := start(t, Config{Owner: owner}, quickEOF)
	errs := inFlight(t, c, 2)
	testutil.StopActor(t, sys, owner, 10*time.Second)
	for _, err := range collect(t, errs, 2) {
		requireClosed(t, err, sentinel.ErrOwnerExited)
	}
	waitDone(t, c)
}

func TestOwnerActorAlreadyDead(t *testing.T) {
	sys := snodoactor.Shared()
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	testutil.StopActor(t, sys, owner, 10*time.Second)
	c := start(t, Config{Owner: owner})
	waitDone(t, c)
	requireClosed(t, c.closedErr(), sentinel.ErrOwnerExited)
}

func TestStopAndPoisonCloseTheConnection(t *testing.T) {
	for name, stop := range map[string]func(*protoactor.ActorSystem, *protoactor.PID){
		"Stop":   func(s *protoactor.ActorSystem, p *protoactor.PID) { s.Root.Stop(p) },
		"Poison": func(s *protoactor.ActorSystem, p *protoactor.PID) { s.Root.Poison(p) },
	} {
		t.Run(name, func(t *testing.T) {
			c := start(t, Config{}, quickEOF)
			errs := inFlight(t, c, 2)
			stop(c.system, c.PID())
			for _, err := range collect(t, errs, 2) {
				requireClosed(t, err, sentinel.ErrActorStopped)
			}
			_, err := c.Request(context.Background(), "test/echo", nil, nil)
			requireClosed(t, err, sentinel.ErrActorStopped)
			waitDone(t, c)
		})
	}
}

func TestExitWithReason(t *testing.T) {
	c := start(t, Config{}, quickEOF)
	errs := inFlight(t, c, 2)
	exitsig.Send(c.system, c.PID(), errTest)
	for _, err := range collect(t, errs, 2) {
		requireClosed(t, err, errTest)
	}
	assert.ErrorIs(t, c.Err(), errTest)
	waitDone(t, c)
}

func TestPanicInTheActorStopsTheConnectionCleanly(t *testing.T) {
	c := start(t, Config{}, quickEOF)
	errs := inFlight(t, c, 2)
	// A server request message without its request makes the dispatcher
	// dereference nil: a real panic on the actor, no test hook needed.
	c.system.Root.Send(c.PID(), &serverRequestMsg{})
	for _, err := range collect(t, errs, 2) {
		requireClosed(t, err, sentinel.ErrActorPanicked)
	}
	waitDone(t, c)
}

func TestCloseFailsInFlightAndIsIdempotent(t *testing.T) {
	c := start(t, Config{}, quickEOF)
	errs := inFlight(t, c, 10)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, c.Close()) }()
	}
	wg.Wait()
	for _, err := range collect(t, errs, 10) {
		requireClosed(t, err, sentinel.ErrClosed)
	}
	_, err := c.Request(context.Background(), "test/echo", nil, nil)
	requireClosed(t, err, sentinel.ErrClosed)
	assert.NoError(t, c.Close())
	waitDone(t, c)
}

func TestCloseNeverKillsAndKeepsDraining(t *testing.T) {
	c := start(t, Config{})
	// The server has admitted a request that answers after Close: it must
	// be able to write the answer (we drain) and exit 0 at EOF, not die of
	// SIGPIPE.
	go c.Request(context.Background(), "test/sleep", map[string]int{"ms": 300}, nil) //nolint:errcheck
	testutil.Eventually(t, func() bool { return c.inFlight() == 1 }, 5*time.Second, "in flight")
	time.Sleep(50 * time.Millisecond) // let the line reach the server
	require.NoError(t, c.Close())
	waitDone(t, c)
	assert.NoError(t, c.exitErr, "server exited cleanly at EOF")
}

func TestCloseDoesNotSignalAServerThatIgnoresEOF(t *testing.T) {
	c := start(t, Config{}, "-ignore-eof")
	pid := c.processID()
	require.NoError(t, c.Close())
	select {
	case <-c.Done():
		t.Fatal("server that ignores EOF was stopped by Close")
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, syscall.Kill(pid, 0), "server still alive")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	waitDone(t, c)
}

// The state names each stage of a stop, and callers that come after it
// are told which: a server that ignores EOF keeps the connection draining
// until it exits.
func TestStateNamesEachStageOfTheStop(t *testing.T) {
	c := start(t, Config{}, "-ignore-eof")
	assert.Equal(t, stateRunning, c.lifeState())
	assert.Equal(t, "running", c.lifeState().String())
	require.NoError(t, c.Close())
	assert.Equal(t, stateDraining, c.lifeState(), "stdin closed, the server still runs")
	err := c.Notify(context.Background(), "notifications/x", nil)
	requireClosed(t, err, sentinel.ErrClosed)
	assert.Contains(t, err.Error(), "(connection draining)")
	require.NoError(t, syscall.Kill(c.processID(), syscall.SIGKILL))
	waitDone(t, c)
	assert.Equal(t, stateReaped, c.lifeState())
	assert.Contains(t, c.Notify(context.Background(), "notifications/x", nil).Error(), "(connection reaped)")
	assert.Equal(t, "lifeState(9)", lifeState(9).String())
}

func TestShutdownGraceSignalsAServerThatIgnoresEOF(t *testing.T) {
	c := start(t, Config{ShutdownGrace: 100 * time.Millisecond}, "-ignore-eof", "-ignore-sigterm")
	// An answer means the server is past its start, where it set SIGTERM
	// aside: on a loaded machine the SIGTERM could otherwise come first.
	_, err := c.Request(context.Background(), "test/pid", nil, nil)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	waitDone(t, c)
	assert.Contains(t, c.exitErr.Error(), "killed")
}

func TestNoDeadlockWhenTheServerStopsReading(t *testing.T) {
	c := start(t, Config{})
	mustCall(t, c, "test/stopReading", nil)
	big := map[string]string{"pad": strings.Repeat("x", 256<<10)}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ { // 4 MiB: far more than the pipe holds
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Request(context.Background(), "test/echo", big, &CallOptions{Timeout: 300 * time.Millisecond})
			assert.ErrorIs(t, err, jsonrpc.ErrTimeout)
		}()
	}
	wg.Wait()
	began := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(began), 10*time.Second, "Close bounded by its flush timeout")
	killServer(t, c) // it lingers 60 s after it stopped reading
}

func TestNoDeadlockWhenBothPipesFill(t *testing.T) {
	c := start(t, Config{})
	big := map[string]string{"pad": strings.Repeat("y", 64<<10)}
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Request(context.Background(), "test/echo", big, &CallOptions{Timeout: 30 * time.Second})
			assert.NoError(t, err)
		}()
	}
	res, err := c.Request(context.Background(), "test/flood", map[string]any{"count": 20000, "method": "notifications/message"}, &CallOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	assert.JSONEq(t, `{"sent":20000}`, string(res))
	wg.Wait()
}

func TestServerGoneBeforeTheWriteReportsItsExit(t *testing.T) {
	c, err := Start(context.Background(), Config{Command: "sh", Args: []string{"-c", "exit 3"}})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Request(context.Background(), "test/echo", nil, nil)
	e := requireClosed(t, err, sentinel.ErrServerExited)
	assert.Contains(t, e.Message, "status 3", "the exit status says more than the broken pipe")
	waitDone(t, c)
}
