package engine

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

// TestIdleCost holds idle connections (each has made one request) and
// checks what one costs: two goroutines (the reader and the process
// waiter; the writer runs only while there is something to write) and,
// on Linux, no OS thread (the waiter waits through the poller). The heap
// and threads are logged (-v).
func TestIdleCost(t *testing.T) {
	const n = 100
	cmd, args := testutil.Server(t)
	warm := start(t, Config{}) // the shared actor system is not counted
	mustCall(t, warm, "test/echo", map[string]any{"message": "hello"})
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	conns := make([]*Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
		for _, c := range conns {
			waitDone(t, c)
		}
	})
	for range n {
		c, err := Start(context.Background(), Config{Command: cmd, Args: args})
		require.NoError(t, err)
		conns = append(conns, c)
		mustCall(t, c, "test/echo", map[string]any{"message": "hello"})
	}
	// Transient goroutines (the actor's mailbox run) end on their own.
	var g int
	deadline := time.Now().Add(5 * time.Second)
	for {
		g = runtime.NumGoroutine() - g0
		if g <= 2*n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	threads := -1
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	t.Logf("process threads: %d", threads)
	t.Logf("per idle connection: %.2f goroutines, %.1f KiB heap", float64(g)/n,
		(float64(after.HeapAlloc)-float64(before.HeapAlloc))/1024/n)
	require.LessOrEqual(t, g, 2*n, "goroutines per idle connection: %.2f", float64(g)/n)
	if runtime.GOOS == "linux" && !strings.HasPrefix(runtime.GOARCH, "mips") && threads >= 0 {
		require.Less(t, threads, n/2, "an idle connection must not hold an OS thread")
	}
}
