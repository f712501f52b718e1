package testutil

import (
	"testing"
	"time"

	"github.com/snodo/snodo/internal/connseam"
)

// Conn is what a started connection (connection.Conn) or client
// (snodo.Client) offers a test's end.
type Conn interface {
	Close() error
	Done() <-chan struct{}
}

// Start is the one way tests start the test server: start is called with
// its command line (flags: see test/testserver) and, when the test ends,
// what it returned is closed as CloseAtEnd says.
func Start[C Conn](tb testing.TB, start func(command string, args []string) (C, error), flags ...string) C {
	tb.Helper()
	command, args := Server(tb, flags...)
	c, err := start(command, args)
	if err != nil {
		tb.Fatalf("starting the test server %v: %v", flags, err)
	}
	CloseAtEnd(tb, c)
	return c
}

// StartLent is Start for a connection (connection.Start): start sets its
// config's Lend to lend, so that the test gets what the connection lends
// (its process id, requests in flight…) and the server is checked
// reaped when the test ends.
func StartLent[C Conn](tb testing.TB, start func(command string, args []string, lend *connseam.Lent) (C, error), flags ...string) (C, *connseam.Lent) {
	tb.Helper()
	command, args := Server(tb, flags...)
	lent := new(connseam.Lent)
	c, err := start(command, args, lent)
	if err != nil {
		tb.Fatalf("starting the test server %v: %v", flags, err)
	}
	closeAtEnd(tb, c, lent.ProcessID)
	return c, lent
}

// CloseAtEnd closes c when the test ends, waits (30 s at most) for Done,
// and checks that the server process was reaped when c tells its id
// (ServerPID).
func CloseAtEnd(tb testing.TB, c Conn) {
	tb.Helper()
	pid := 0
	if p, ok := c.(interface{ ServerPID() int }); ok {
		pid = p.ServerPID()
	}
	closeAtEnd(tb, c, pid)
}

// closeAtEnd is CloseAtEnd for the server of process id pid (0: none
// to check).
func closeAtEnd(tb testing.TB, c Conn, pid int) {
	tb.Helper()
	tb.Cleanup(func() {
		_ = c.Close()
		select {
		case <-c.Done():
		case <-time.After(30 * time.Second):
			tb.Errorf("server still running 30 s after Close")
		}
		if pid > 0 {
			AssertReaped(tb, pid, 10*time.Second)
		}
	})
}
