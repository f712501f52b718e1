//go:build soak

// Package soak_test runs snodo for a long time against the test server and
// checks that memory, goroutines and file descriptors stay flat. It is not
// part of the default suite: run it with make soak (go test -tags soak).
package soak_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

const (
	totalCalls = 1_000_000
	callers    = 64
	cycles     = 10_000

	// Growth allowed from the first sample to the last.
	heapSlack      = 8 << 20
	goroutineSlack = 2
)

type sample struct {
	label      string
	done       int
	elapsed    time.Duration
	heapInuse  uint64
	heapObjs   uint64
	goroutines int
	fds        int
	children   int
}

// measure settles the runtime (two collections, a moment for goroutines
// that are finishing) and samples it.
func measure(label string, done int, began time.Time) sample {
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return sample{
		label: label, done: done, elapsed: time.Since(began),
		heapInuse: m.HeapInuse, heapObjs: m.HeapObjects,
		goroutines: runtime.NumGoroutine(), fds: testutil.OpenFDs(), children: len(testutil.ChildPIDs()),
	}
}

func report(t *testing.T, title, unit string, samples []sample) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n| sample | %s | elapsed | heap in use | heap objects | goroutines | fds | child processes |\n|---|---|---|---|---|---|---|---|\n", title, unit)
	for _, s := range samples {
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f MiB | %d | %d | %d | %d |\n",
			s.label, s.done, s.elapsed.Round(time.Millisecond), float64(s.heapInuse)/(1<<20), s.heapObjs, s.goroutines, s.fds, s.children)
	}
	t.Log(b.String())
	first, last := samples[0], samples[len(samples)-1]
	if grew := int64(last.heapInuse) - int64(first.heapInuse); grew > heapSlack {
		t.Errorf("heap in use grew by %d KiB (limit %d KiB)", grew>>10, heapSlack>>10)
	}
	if last.goroutines > first.goroutines+goroutineSlack {
		t.Errorf("goroutines grew from %d to %d", first.goroutines, last.goroutines)
	}
	if last.fds > first.fds {
		t.Errorf("file descriptors grew from %d to %d", first.fds, last.fds)
	}
	if last.children > first.children {
		t.Errorf("child processes grew from %d to %d", first.children, last.children)
	}
}

// TestSoakCalls makes a million calls from 64 goroutines on one
// connection to the test server's fast echo.
func TestSoakCalls(t *testing.T) {
	cmd, args := testutil.Server(t, "-fast")
	ctx := context.Background()
	c, err := snodo.Connect(ctx, cmd, args, snodo.WithEra(snodo.EraLegacy), snodo.WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var failures atomic.Int64
	run := func(from, to int) {
		var next atomic.Int64
		next.Store(int64(from))
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(to) {
						return
					}
					params := map[string]int64{"i": i}
					res, err := c.Request(ctx, "test/echo", params)
					if err != nil || string(res) != `{"i":`+strconv.FormatInt(i, 10)+`}` {
						if failures.Add(1) <= 5 {
							t.Errorf("call %d: %s, %v", i, res, err)
						}
					}
				}
			})
		}
		wg.Wait()
	}

	run(0, 10_000) // warm up: buffers, pools and the goroutines' stacks
	began := time.Now()
	samples := []sample{measure("start", 0, began)}
	run(10_000, 10_000+totalCalls/2)
	samples = append(samples, measure("middle", totalCalls/2, began))
	run(10_000+totalCalls/2, 10_000+totalCalls)
	elapsed := time.Since(began)
	samples = append(samples, measure("end", totalCalls, began))
	report(t, fmt.Sprintf("%d calls, %d callers, one connection: %.0f calls/s, %d failures",
		totalCalls, callers, float64(totalCalls)/elapsed.Seconds(), failures.Load()), "calls", samples)
	if failures.Load() > 0 {
		t.Errorf("%d calls failed", failures.Load())
	}
}

// TestSoakConnectClose connects (era detection included), makes one call
// and closes, ten thousand times; every server must be reaped.
func TestSoakConnectClose(t *testing.T) {
	cmd, args := testutil.Server(t)
	ctx := context.Background()
	cycle := func(i int) {
		c, err := snodo.Connect(ctx, cmd, args)
		if err != nil {
			t.Fatalf("cycle %d: connect: %v", i, err)
		}
		if _, err := c.Request(ctx, "test/echo", map[string]int{"i": i}); err != nil {
			t.Errorf("cycle %d: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("cycle %d: close: %v", i, err)
		}
		select {
		case <-c.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("cycle %d: server not done 30 s after Close", i)
		}
	}
	for i := range 100 { // warm up
		cycle(i)
	}
	began := time.Now()
	samples := []sample{measure("start", 0, began)}
	for i := range cycles {
		cycle(i)
		if i+1 == cycles/2 {
			samples = append(samples, measure("middle", i+1, began))
		}
	}
	elapsed := time.Since(began)
	samples = append(samples, measure("end", cycles, began))
	report(t, fmt.Sprintf("%d connect/call/close cycles: %.1f ms per cycle",
		cycles, float64(elapsed.Milliseconds())/cycles), "cycles", samples)
}
