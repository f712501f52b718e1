package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// queued is what waits in the writer's queue (live bytes) right now.
func (c *Conn) queued() int {
	c.wr.mu.Lock()
	defer c.wr.mu.Unlock()
	return c.wr.live
}

// bigParams is a 256 KiB request body.
var bigParams = map[string]string{"pad": strings.Repeat("p", 256<<10)}

// Requests that time out while the server is not reading are dropped
// from the write queue: the server never sees them and gets no
// cancellation for them, and their bytes are freed at once.
func TestRequestsThatGaveUpAreNeverWritten(t *testing.T) {
	c := start(t, Config{})
	mustCall(t, c, "test/pauseReading", map[string]int{"ms": 3000})
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Request(context.Background(), "test/echo", bigParams, &CallOptions{Timeout: 300 * time.Millisecond})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, jsonrpc.ErrTimeout)
	}
	// What may still wait: the cancellation of the request being written.
	require.Less(t, c.queued(), 1<<10, "the lines of callers who gave up still wait to be written")
	// Once the server reads again it has seen at most the line that was
	// being written when they gave up, and a cancellation for each it saw.
	mustCall(t, c, "test/echo", nil)
	var seen struct {
		Requests []json.RawMessage `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, c, "test/requests", map[string]string{"method": "test/echo"}), &seen))
	require.LessOrEqual(t, len(seen.Requests), 3, "requests whose callers gave up reached the server")
	t.Logf("%d of %d timed-out requests reached the server (the one being written)", len(seen.Requests)-1, n)
	if written := len(seen.Requests) - 1; written > 0 {
		receivedCancels(t, c, written)
	}
}

// The write queue is bounded in bytes: past it a caller's request fails at
// once, locally, unsent; the connection lives on.
func TestWriteQueueBoundRefusesCallersAtOnce(t *testing.T) {
	c := start(t, Config{MaxWriteQueue: 1 << 20, Timeout: 20 * time.Second})
	mustCall(t, c, "test/pauseReading", map[string]int{"ms": 2000})
	var full, waited int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 16 { // 4 MiB against a 1 MiB bound
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			_, err := c.Request(context.Background(), "test/echo", bigParams, nil)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, sentinel.ErrWriteQueueFull) {
				full++
				var e *jsonrpc.Error
				require.ErrorAs(t, err, &e)
				require.True(t, e.Local())
				require.Contains(t, err.Error(), "WithMaxWriteQueue")
				// At once: before the paused server read again, so before
				// any request that waited got its answer.
				require.Zero(t, waited, "refused after %v, once the server read again", time.Since(began))
				return
			}
			require.NoError(t, err)
			waited++
		}()
	}
	wg.Wait()
	t.Logf("bound 1 MiB, 16 × 256 KiB: %d refused at once, %d answered once the server read again", full, waited)
	require.Positive(t, full)
	require.Positive(t, waited)
	mustCall(t, c, "test/echo", nil)
}

// Notify to a server that is not reading honours the connection's
// timeout and its ctx, and the dropped line is never written.
func TestNotifyIsBoundedByTimeoutAndContext(t *testing.T) {
	c := start(t, Config{Timeout: 300 * time.Millisecond})
	mustCall(t, c, "test/pauseReading", map[string]int{"ms": 3000})
	// Fill the pipe so that the notifications queue behind it.
	_, err := c.Request(context.Background(), "test/echo", bigParams, nil)
	require.ErrorIs(t, err, jsonrpc.ErrTimeout)

	began := time.Now()
	err = c.Notify(context.Background(), "notifications/late", map[string]int{"n": 1})
	require.ErrorIs(t, err, jsonrpc.ErrTimeout)
	require.Less(t, time.Since(began), 2*time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	err = c.Notify(ctx, "notifications/late", map[string]int{"n": 2})
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, c.queued(), 1<<10, "only the echo's cancellation may wait")

	// After the pause: neither notification was written.
	_, err = c.Request(context.Background(), "test/echo", nil, &CallOptions{Timeout: 20 * time.Second})
	require.NoError(t, err)
	require.NoError(t, c.Notify(context.Background(), "notifications/after", nil))
	mustCall(t, c, "test/waitNotification", map[string]any{"method": "notifications/after"})
	got := mustCall(t, c, "test/received", map[string]string{"method": "notifications/late"})
	require.JSONEq(t, `{"messages":[]}`, string(got))
}

// A server that floods requests and reads nothing: the refusals pile up
// to twice the bound, then the connection stops with snodo.ErrNotReading.
func TestServerThatAsksButNeverReadsIsStopped(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := start(t, Config{MaxWriteQueue: 64 << 10, Logger: logs.Logger(), Timeout: 30 * time.Second}, "-era", "legacy")
	_, err := c.Request(context.Background(), "test/floodRequests", map[string]any{"count": 20000, "method": "x/unknown"}, nil)
	requireClosed(t, err, sentinel.ErrNotReading)
	waitDone(t, c)
	require.ErrorIs(t, c.Err(), sentinel.ErrNotReading)
	require.Contains(t, c.Err().Error(), "not reading its stdin")
}

// A caller's own line, half written to a server that stopped reading, is
// that caller's: when it times out, the cancellation queued behind the
// rest of its line does not make the connection take the server for one
// that stopped reading (the line may be far past twice the bound). The
// line cannot be cut short without corrupting the stream, so the server
// reads all of it once it reads again, and then the cancellation: it is
// sent, after the line.
func TestCancelAfterAHalfWrittenLineDoesNotStopTheConnection(t *testing.T) {
	c := start(t, Config{MaxWriteQueue: 64 << 10, Timeout: 20 * time.Second})
	mustCall(t, c, "test/pauseReading", map[string]int{"ms": 1500})
	huge := map[string]string{"pad": strings.Repeat("p", 4<<20)} // past the pipe, and 32 times the bound
	_, err := c.Request(context.Background(), "test/echo", huge, &CallOptions{Timeout: 300 * time.Millisecond})
	require.ErrorIs(t, err, jsonrpc.ErrTimeout)
	require.NoError(t, c.Err(), "the connection lives on")

	testutil.Eventually(t, func() bool { return c.queued() == 0 }, 20*time.Second, "the server reads again")
	got := mustCall(t, c, "test/waitNotification", map[string]any{"method": "notifications/cancelled"})
	require.Len(t, testutil.CancelledIDs(t, got), 1, "the cancellation is sent, after the whole line")
	require.NoError(t, c.Err())
}
