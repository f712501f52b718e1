// Package chaos_test runs snodo against real server processes that fail in
// every way the chaos matrix lists, and checks after each fault that every
// caller got exactly one answer saying what happened, that no goroutine,
// process, zombie or file descriptor is left, and that the connection's
// observable state (Err, Done, InFlight) is exact.
package chaos_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// quickEOF makes the test server give up on its in-flight requests soon
// after its stdin closes.
const quickEOF = "-eof-grace=100ms"

// rig is one connection under test with what it started from.
type rig struct {
	t      *testing.T
	c      *engine.Conn
	lent   *connseam.Lent // what c lends: its process id, requests in flight
	pid    int
	fds    int
	stderr *testutil.Buffer
	logs   *testutil.LogRecorder
}

// dial starts the test server with flags on a connection whose stderr and
// log records are captured. The descriptor count is taken before the
// start, so finish can check that every descriptor came back.
func dial(t *testing.T, cfg engine.Config, flags ...string) *rig {
	t.Helper()
	testutil.ServerPath(t) // build first: the build is not part of the count
	r := &rig{t: t, stderr: &testutil.Buffer{}, logs: &testutil.LogRecorder{}}
	r.fds = testutil.OpenFDs()
	cfg.Command, cfg.Args = testutil.Server(t, flags...)
	if cfg.Stderr == nil {
		cfg.Stderr = r.stderr
	}
	if cfg.Logger == nil {
		cfg.Logger = r.logs.Logger()
	}
	r.lent = new(connseam.Lent)
	cfg.Lend = r.lent
	c, err := engine.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	r.c, r.pid = c, r.lent.ProcessID
	t.Cleanup(func() { // a failed test must not leave a server behind
		c.Close()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
		}
	})
	return r
}

// finish closes the connection (a no-op when it has stopped already),
// waits for Done and checks the end state: Err wraps reason, nothing in
// flight, the server reaped, descriptors back, no goroutine left.
func (r *rig) finish(reason error) {
	t := r.t
	t.Helper()
	if err := r.c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-r.c.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("Done not closed 20 s after Close")
	}
	if err := r.c.Err(); !errors.Is(err, reason) {
		t.Errorf("Err() = %v, want it to wrap %v", err, reason)
	}
	if n := r.lent.InFlight(); n != 0 {
		t.Errorf("InFlight() = %d after Done", n)
	}
	if _, err := r.c.Request(context.Background(), "test/echo", nil, nil); !isClosed(err, reason) {
		t.Errorf("a request after Done got %v, want -32000 wrapping %v", err, reason)
	}
	testutil.AssertReaped(t, r.pid, 10*time.Second)
	testutil.AssertFDsBack(t, r.fds, 10*time.Second)
	testutil.VerifyNone(t)
}

// isClosed: err is the local -32000 wrapping reason.
func isClosed(err error, reason error) bool {
	var e *jsonrpc.Error
	return errors.As(err, &e) && e.Code == jsonrpc.CodeConnectionClosed &&
		errors.Is(err, jsonrpc.ErrConnectionClosed) && errors.Is(err, reason)
}

// answer is what one caller got.
type answer struct {
	caller int
	result []byte
	err    error
}

// crowd is a set of callers whose answers are counted one by one, so that
// a caller answered twice, or never, is caught.
type crowd struct {
	answers chan answer
	count   []atomic.Int32
	n       int
}

// call starts n callers of method with params; each reports exactly once.
func call(c *engine.Conn, n int, method string, params any, opts *engine.CallOptions) *crowd {
	cr := &crowd{answers: make(chan answer, n), count: make([]atomic.Int32, n), n: n}
	for i := range n {
		go func() {
			res, err := c.Request(context.Background(), method, params, opts)
			cr.count[i].Add(1)
			cr.answers <- answer{caller: i, result: res, err: err}
		}()
	}
	return cr
}

// collect waits for every caller's answer and checks that each answered
// exactly once.
func (cr *crowd) collect(t *testing.T, within time.Duration) []answer {
	t.Helper()
	out := make([]answer, 0, cr.n)
	deadline := time.After(within)
	for len(out) < cr.n {
		select {
		case a := <-cr.answers:
			out = append(out, a)
		case <-deadline:
			t.Fatalf("only %d of %d callers answered within %v", len(out), cr.n, within)
		}
	}
	for i := range cr.count {
		if n := cr.count[i].Load(); n != 1 {
			t.Errorf("caller %d answered %d times", i, n)
		}
	}
	return out
}

// waitInFlight waits until n requests are in flight on r's connection.
func waitInFlight(t *testing.T, r *rig, n int) {
	t.Helper()
	testutil.Eventually(t, func() bool { return r.lent.InFlight() >= n }, 10*time.Second, "requests in flight")
}

// blockingWriter blocks every Write until released.
type blockingWriter struct{ release chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) { <-w.release; return len(p), nil }
