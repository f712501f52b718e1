package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/test/testutil"
)

func TestConcurrentRequestsAreCorrelated(t *testing.T) {
	c := start(t, Config{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[int64]bool{}
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				want := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				res, err := c.Request(context.Background(), "test/echo", json.RawMessage(want), &CallOptions{
					Sent: func(id int64) { mu.Lock(); assert.False(t, ids[id], "id %d reused", id); ids[id] = true; mu.Unlock() },
				})
				if assert.NoError(t, err) {
					assert.JSONEq(t, want, string(res))
				}
			}
		}()
	}
	wg.Wait()
	assert.Len(t, ids, 32*25)
	assert.Equal(t, 0, c.inFlight())
}

func TestEnvironmentAndDirectory(t *testing.T) {
	t.Setenv("SNODO_INHERITED", "yes")
	dir := t.TempDir()
	c := start(t, Config{Dir: dir, Env: []EnvVar{{Name: "SNODO_EXTRA", Value: "42"}, {Name: "SNODO_INHERITED", Unset: true}}})
	assert.JSONEq(t, `{"value":"42","set":true}`, string(mustCall(t, c, "test/env", map[string]string{"name": "SNODO_EXTRA"})))
	assert.JSONEq(t, `{"value":"","set":false}`, string(mustCall(t, c, "test/env", map[string]string{"name": "SNODO_INHERITED"})))
	var cwd struct{ Dir string }
	require.NoError(t, json.Unmarshal(mustCall(t, c, "test/cwd", nil), &cwd))
	want, _ := filepath.EvalSymlinks(dir)
	got, _ := filepath.EvalSymlinks(cwd.Dir)
	assert.Equal(t, want, got)
}

func TestCleanEnvironment(t *testing.T) {
	t.Setenv("SNODO_SECRET", "hunter2")
	c := start(t, Config{CleanEnv: true, AllowEnv: []string{"PATH"}, Env: []EnvVar{{Name: "SNODO_EXTRA", Value: "1"}}})
	assert.JSONEq(t, `{"value":"","set":false}`, string(mustCall(t, c, "test/env", map[string]string{"name": "SNODO_SECRET"})))
	assert.JSONEq(t, `{"value":"1","set":true}`, string(mustCall(t, c, "test/env", map[string]string{"name": "SNODO_EXTRA"})))
	assert.Contains(t, string(mustCall(t, c, "test/env", map[string]string{"name": "PATH"})), `"set":true`)
}

// blockingWriter never returns from Write until released.
type blockingWriter struct{ release chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) { <-w.release; return len(p), nil }

func TestBlockingStderrWriterNeverStallsTheConnection(t *testing.T) {
	w := blockingWriter{release: make(chan struct{})}
	defer close(w.release)
	c := start(t, Config{Stderr: w})
	res, err := c.Request(context.Background(), "test/stderr", map[string]int{"lines": 2000, "bytesPerLine": 1024}, &CallOptions{Timeout: 20 * time.Second})
	require.NoError(t, err)
	assert.JSONEq(t, `{"lines":2000}`, string(res))
	mustCall(t, c, "test/echo", map[string]int{"ok": 1})
}

func TestMissingCommandFailsAtOnce(t *testing.T) {
	_, err := Start(context.Background(), Config{Command: "snodo-no-such-command"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "snodo-no-such-command")

	notExec := filepath.Join(t.TempDir(), "plain.txt")
	require.NoError(t, os.WriteFile(notExec, []byte("hi"), 0o644))
	_, err = Start(context.Background(), Config{Command: notExec})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot start server")
}

func TestServerErrorIsNotMistakenForLocal(t *testing.T) {
	c := start(t, Config{})
	_, err := c.Request(context.Background(), "test/error", map[string]any{"code": -32001, "message": "remote timeout"}, nil)
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, -32001, e.Code)
	assert.Equal(t, "remote timeout", e.Message)
	assert.False(t, e.Local())
	assert.NotErrorIs(t, err, jsonrpc.ErrTimeout)

	_, err = c.Request(context.Background(), "test/error", map[string]any{"code": -32000, "message": "remote"}, nil)
	assert.NotErrorIs(t, err, jsonrpc.ErrConnectionClosed)
}

func TestTimeoutCancelsOnServerAndIgnoresLateAnswer(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := start(t, Config{Logger: logs.Logger()})
	var sent int64
	_, err := c.Request(context.Background(), "test/sleep", map[string]int{"ms": 300}, &CallOptions{Timeout: 50 * time.Millisecond, Sent: func(id int64) { sent = id }})
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, jsonrpc.CodeTimeout, e.Code)
	assert.ErrorIs(t, err, jsonrpc.ErrTimeout)
	assert.Equal(t, []int64{sent}, receivedCancels(t, c, 1))
	// The late answer arrives and is dropped, at Debug: it crossed the
	// cancel, as answers to requests given up may; the connection carries on.
	testutil.Eventually(t, func() bool { return logs.Count("late answer to a request the client gave up on") == 1 }, 10*time.Second, "late answer logged")
	assert.Zero(t, logs.Count("no request in flight"), "not logged as an unknown answer")
	mustCall(t, c, "test/echo", map[string]int{"after": 1})
}

func TestContextCancellation(t *testing.T) {
	c := start(t, Config{}, "-eof-grace=100ms")
	ctx, cancel := context.WithCancel(context.Background())
	var sent int64
	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, "test/sleep", map[string]int{"ms": 5000}, &CallOptions{Sent: func(id int64) { sent = id }})
		errc <- err
	}()
	testutil.Eventually(t, func() bool { return c.inFlight() == 1 }, 5*time.Second, "request in flight")
	cancel()
	err := <-errc
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []int64{sent}, receivedCancels(t, c, 1))
}

func TestNotifyReturnsOnceWritten(t *testing.T) {
	c := start(t, Config{})
	require.NoError(t, c.Notify(context.Background(), "notifications/roots/list_changed", map[string]int{"n": 1}))
	res := mustCall(t, c, "test/received", map[string]string{"method": "notifications/roots/list_changed"})
	assert.Contains(t, string(res), `"n":1`)
}

func TestBadInputNeverBreaksTheConnection(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := start(t, Config{Logger: logs.Logger()})
	assert.JSONEq(t, `{"ok":true}`, string(mustCall(t, c, "test/garbage", nil)))
	assert.GreaterOrEqual(t, logs.Count("not JSON-RPC"), 4)
	assert.GreaterOrEqual(t, logs.Count("no request in flight"), 1)
	assert.JSONEq(t, `{"ok":true}`, string(mustCall(t, c, "test/split", map[string]int{"parts": 10, "delayMs": 5})))
	assert.JSONEq(t, `{"n":1}`, string(mustCall(t, c, "test/duplicate", nil)))
	mustCall(t, c, "test/echo", map[string]string{"still": "up"})
	testutil.Eventually(t, func() bool { return logs.Count("no request in flight") >= 3 }, 5*time.Second, "duplicates logged")
}

func TestOverlongLineIsDiscardedAndTimesOut(t *testing.T) {
	c := start(t, Config{MaxLineBytes: 4096})
	_, err := c.Request(context.Background(), "test/overlong", map[string]int{"bytes": 1 << 20}, &CallOptions{Timeout: 500 * time.Millisecond})
	assert.ErrorIs(t, err, jsonrpc.ErrTimeout)
	// Just under the limit still works, and so does everything after.
	res, err := c.Request(context.Background(), "test/overlong", map[string]int{"bytes": 4000}, nil)
	require.NoError(t, err)
	assert.Greater(t, len(res), 3900)
	mustCall(t, c, "test/echo", map[string]int{"after": 1})
}

// The line limit is on a line's content: an answer of exactly
// MaxLineBytes is taken whether the server ends it with "\n" or "\r\n"
// (the '\r' counted before); one byte more is discarded and logged, and
// its request times out.
func TestLineLimitCountsNoLineEnding(t *testing.T) {
	const limit = 4096
	for _, crlf := range []bool{false, true} {
		logs := &testutil.LogRecorder{}
		c := start(t, Config{MaxLineBytes: limit, Logger: logs.Logger()})
		res, err := c.Request(context.Background(), "test/overlong", map[string]any{"bytes": limit, "crlf": crlf}, &CallOptions{Timeout: 10 * time.Second})
		require.NoError(t, err, "a line of exactly the limit, crlf %v", crlf)
		assert.Greater(t, len(res), limit-64)
		_, err = c.Request(context.Background(), "test/overlong", map[string]any{"bytes": limit + 1, "crlf": crlf}, &CallOptions{Timeout: 300 * time.Millisecond})
		require.ErrorIs(t, err, jsonrpc.ErrTimeout, "a line one byte over, crlf %v", crlf)
		assert.True(t, logs.Has("discarded an overlong line from the server"), "crlf %v", crlf)
		assert.True(t, logs.Has("bytes=4097 max_line_bytes=4096"), "crlf %v: %v", crlf, logs.Messages())
		mustCall(t, c, "test/echo", map[string]int{"after": 1})
	}
}

// The line cap goes from 64 to limits.MaxLineBytesLimit (1 GiB): past it Start
// refuses, saying what to pass, before anything starts. math.MaxInt was
// taken before, and overflowed the reader's arithmetic: every line
// counted as overlong and was discarded. The limit itself works.
func TestLineCapBounds(t *testing.T) {
	command, args := testutil.Server(t)
	for _, n := range []int{-1, 63, limits.MaxLineBytesLimit + 1, math.MaxInt} {
		before := testutil.ChildPIDs()
		_, err := Start(context.Background(), Config{Command: command, Args: args, MaxLineBytes: n})
		require.Error(t, err, "MaxLineBytes %d", n)
		require.ErrorContains(t, err, "MaxLineBytes")
		if n < 64 {
			require.ErrorContains(t, err, "pass at least 64")
		} else {
			require.ErrorContains(t, err, "pass at most 1073741824")
		}
		for _, pid := range testutil.ChildPIDs() {
			require.Contains(t, before, pid, "nothing may be started")
		}
	}
	require.NoError(t, limits.CheckMaxLineBytes(64))
	c := start(t, Config{MaxLineBytes: limits.MaxLineBytesLimit})
	res, err := c.Request(context.Background(), "test/overlong", map[string]int{"bytes": 1 << 20}, nil)
	require.NoError(t, err)
	assert.Greater(t, len(res), 1<<20-64)
}

func TestServerWithoutHandlerGetsMethodNotFound(t *testing.T) {
	c := start(t, Config{})
	res := mustCall(t, c, "test/serverRequest", map[string]any{"method": "roots/list", "count": 3, "concurrent": true})
	var out struct {
		Responses []struct{ Error *jsonrpc.Error }
	}
	require.NoError(t, json.Unmarshal(res, &out))
	require.Len(t, out.Responses, 3)
	for _, r := range out.Responses {
		require.NotNil(t, r.Error)
		assert.Equal(t, jsonrpc.CodeMethodNotFound, r.Error.Code)
	}
}

func TestLargeAnswersKeepTheirBytes(t *testing.T) {
	c := start(t, Config{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ { // large answers handed over while small ones flow
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Request(context.Background(), "test/overlong", map[string]int{"bytes": 1 << 20}, nil)
			require.NoError(t, err)
			require.Greater(t, len(res), 1<<20-64)
			var s string
			require.NoError(t, json.Unmarshal(res, &s))
			require.Equal(t, strings.Repeat("x", len(s)), s)
			res2 := mustCall(t, c, "test/echo", map[string]int{"i": i})
			assert.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(res2))
		}()
	}
	wg.Wait()
}

// TestTimeoutsShareOneTimer: the table's one timer serves every deadline:
// a short timeout after longer ones still fires on time, the long ones
// keep theirs, and answers in time are not disturbed.
func TestTimeoutsShareOneTimer(t *testing.T) {
	c := start(t, Config{})
	var wg sync.WaitGroup
	long := make([]error, 3)
	for i := range long {
		wg.Go(func() {
			_, long[i] = c.Request(context.Background(), "test/sleep", map[string]int{"ms": 400}, &CallOptions{Timeout: 10 * time.Second})
		})
	}
	time.Sleep(20 * time.Millisecond) // let the long ones arm the timer first
	t0 := time.Now()
	_, err := c.Request(context.Background(), "test/sleep", map[string]int{"ms": 5000}, &CallOptions{Timeout: 100 * time.Millisecond})
	assert.ErrorIs(t, err, jsonrpc.ErrTimeout)
	assert.Less(t, time.Since(t0), 3*time.Second, "the short timeout did not wait for the long ones")
	_, err = c.Request(context.Background(), "test/sleep", map[string]int{"ms": 5000}, &CallOptions{MaxTotalTimeout: 100 * time.Millisecond})
	assert.ErrorIs(t, err, jsonrpc.ErrTimeout)
	assert.ErrorContains(t, err, "maximum total time")
	assert.ErrorContains(t, err, "raise it with the MaxTotalTimeout request option", "the hint names the limit that passed")
	wg.Wait()
	for _, err := range long {
		assert.NoError(t, err)
	}
	assert.Zero(t, c.inFlight())
}

// A server writing junk as fast as it can does not get one log record a
// line: the reader logs at most readerLogsPerSecond records a second
// about what the server sends, counts the rest, and says how many it
// left out with the next record it logs and when it ends. Before, 20,000
// two-byte lines made 20,000 records of ~100 bytes each.
func TestJunkFloodDoesNotFloodTheLog(t *testing.T) {
	const count = 20000
	logs := &testutil.LogRecorder{}
	c := start(t, Config{Logger: logs.Logger()})
	began := time.Now()
	for _, line := range []string{"x", `{"jsonrpc":"2.0","id":999999,"result":{}}`} {
		_, err := c.Request(context.Background(), "test/junk", map[string]any{"count": count, "line": line}, nil)
		require.NoError(t, err)
	}
	logged := logs.Count("not JSON-RPC") + logs.Count("no request in flight")
	windows := int(time.Since(began)/time.Second) + 2 // the seconds the flood touched, at most
	assert.LessOrEqual(t, logged, windows*readerLogsPerSecond, "records logged for %d junk lines", 2*count)
	mustCall(t, c, "test/echo", nil)
	require.NoError(t, c.Close())
	waitDone(t, c)
	// Every line is accounted for: logged, or counted in a later record.
	suppressed := 0
	for _, m := range logs.Messages() {
		if _, n, ok := strings.Cut(m, "suppressed="); ok {
			k, err := strconv.Atoi(strings.Fields(n)[0])
			require.NoError(t, err, m)
			suppressed += k
		}
	}
	assert.Equal(t, 2*count, logged+suppressed)
}
