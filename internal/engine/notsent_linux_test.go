package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/sentinel"
)

// A server killed while it had stopped reading: the requests it left in
// the pipe, and those still queued in the writer behind them (more than a
// pipe's worth), fail with -32000 wrapping snodo.ErrNotSent as well as the exit;
// one that reaches the connection after the kill does too.
func TestUnreadRequestsFailNotSent(t *testing.T) {
	c := start(t, Config{})
	mustCall(t, c, "test/stopReading", nil) // answered; then the server reads no more
	const n = 40
	pad := strings.Repeat("x", 4<<10) // 40 × 4 KiB: past the pipe's 64 KiB
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Request(context.Background(), "test/echo", map[string]any{"i": i, "pad": pad}, &CallOptions{Timeout: time.Minute})
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return c.inFlight() == n }, 10*time.Second, time.Millisecond)
	require.NoError(t, syscall.Kill(c.processID(), syscall.SIGKILL))
	wg.Wait()
	close(errs)
	for err := range errs {
		e := requireClosed(t, err, sentinel.ErrServerExited)
		require.ErrorIs(t, err, sentinel.ErrNotSent)
		require.Contains(t, e.Message, "never read by the server; it is safe to send again")
	}
	waitDone(t, c)
	_, err := c.Request(context.Background(), "test/echo", nil, nil)
	requireClosed(t, err, sentinel.ErrServerExited)
	require.ErrorIs(t, err, sentinel.ErrNotSent)
}

// A server that read a request and then died: that request (and one that
// made it die) fail with -32000 without snodo.ErrNotSent, since the server may
// have run them.
func TestReadRequestsFailSent(t *testing.T) {
	c := start(t, Config{})
	before := c.wr.written.Load()
	slept := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "test/sleep", map[string]any{"ms": 60000}, nil)
		slept <- err
	}()
	require.Eventually(t, func() bool { return c.inFlight() == 1 && c.wr.written.Load() > before }, 10*time.Second, time.Millisecond)
	// The server reads in order: once test/echo, written after it, is
	// answered, test/sleep was read.
	mustCall(t, c, "test/echo", nil)
	_, err := c.Request(context.Background(), "test/crash", map[string]any{"code": 3}, nil)
	requireClosed(t, err, sentinel.ErrServerExited)
	require.False(t, errors.Is(err, sentinel.ErrNotSent), "a request the server read and died of counts as sent: %v", err)
	err = <-slept
	requireClosed(t, err, sentinel.ErrServerExited)
	require.False(t, errors.Is(err, sentinel.ErrNotSent), "a request the server read counts as sent: %v", err)
}

// A connection that stops while its server lives on (here, one that
// stopped reading): the server can still read what it was sent, so
// nothing counts as unread.
func TestLiveServerRequestsCountAsSent(t *testing.T) {
	c := start(t, Config{})
	mustCall(t, c, "test/stopReading", nil)
	defer func() { _ = syscall.Kill(c.processID(), syscall.SIGKILL) }() // it would sleep for a minute
	before := c.wr.written.Load()
	errs := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "test/echo", nil, &CallOptions{Timeout: time.Minute})
		errs <- err
	}()
	// Written to the pipe, not only in the table: a line the writer has
	// not taken when the connection stops is never sent, rightly.
	require.Eventually(t, func() bool { return c.inFlight() == 1 && c.wr.written.Load() > before }, 10*time.Second, time.Millisecond)
	c.terminate(errTest) // the server still holds its stdin
	err := <-errs
	requireClosed(t, err, errTest)
	require.False(t, errors.Is(err, sentinel.ErrNotSent), "the server may still read it: %v", err)
}
