package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/bench/clients"
	"github.com/snodo/snodo/bench/internal/remotebench"
	"github.com/snodo/snodo/bench/server"
)

// serverBin is the bench server, built once by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	remotebench.ChildMain()
	dir, err := os.MkdirTemp("", "benchserver")
	if err != nil {
		panic(err)
	}
	serverBin = filepath.Join(dir, "benchserver")
	if out, err := exec.Command("go", "build", "-o", serverBin, "./cmd/benchserver").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var eras = []string{clients.Modern, clients.Legacy}

// TestSmoke: every client, in both eras, connects, calls each tool, and
// receives subscription events (modern era).
func TestSmoke(t *testing.T) {
	for _, era := range eras {
		for _, name := range clients.Names() {
			t.Run(name+"/"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var events atomic.Int64
				var onEvent func()
				if era == clients.Modern {
					onEvent = func() { events.Add(1) }
				}
				c, err := clients.Connect(ctx, name, clients.Options{Command: serverBin, Era: era, OnEvent: onEvent})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if text, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"hello"}`)); err != nil || text != "hello" {
					t.Fatalf("echo: %q, %v", text, err)
				}
				if text, err := c.Call(ctx, "ask", nil); err != nil || text != "hello" {
					t.Fatalf("ask: %q, %v", text, err)
				}
				if text, err := c.Call(ctx, "big", nil); err != nil || len(text) < server.BigLineBytes-256 {
					t.Fatalf("big: %d bytes, %v", len(text), err)
				}
				if era != clients.Modern {
					return
				}
				if text, err := c.Call(ctx, "emit", json.RawMessage(`{"count":10}`)); err != nil || text != "10" {
					t.Fatalf("emit: %q, %v", text, err)
				}
				for events.Load() < 10 {
					if ctx.Err() != nil {
						t.Fatalf("%d of 10 events arrived", events.Load())
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
}

// BenchmarkCall is the comparison's echo call, 1 in flight, per client and
// era: go test -run '^$' -bench Call -benchmem
func BenchmarkCall(b *testing.B) {
	for _, era := range eras {
		for _, name := range clients.Names() {
			b.Run("era="+era+"/client="+name, func(b *testing.B) {
				c, err := clients.Connect(context.Background(), name, clients.Options{Command: serverBin, Era: era})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				args := json.RawMessage(`{"text":"hello"}`)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Call(context.Background(), "echo", args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSnodoRequest is snodo's Client.Request with raw params, the
// result left undecoded: the transport plus the era's _meta, without the
// typed layer of CallTool.
func BenchmarkSnodoRequest(b *testing.B) {
	for _, era := range []snodo.Era{snodo.EraModern, snodo.EraLegacy} {
		b.Run("era="+string(era), func(b *testing.B) {
			c, err := snodo.Connect(context.Background(), serverBin, nil, snodo.WithEra(era))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Request(context.Background(), "tools/call", params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRequestFast is the transport alone against the fast server
// (benchserver -fast): snodo's Client.Request and the minimal client's raw
// request, params encoded beforehand, at 1 and 64 in flight. Besides
// ns/op it reports cpu-ns/op, the test process's user+system CPU time per
// call, which holds on a busy machine, and the read and write system calls
// per call (batching) and the context switches per call of all its
// threads (vcsw/op: sleeps and wake-ups); compare interleaved runs with benchstat:
//
//	go test -run '^$' -bench RequestFast -count 10 -benchmem | benchstat -
func BenchmarkRequestFast(b *testing.B) {
	for _, era := range eras {
		for _, name := range []string{"snodo", "minimal"} {
			for _, inFlight := range []int{1, 64} {
				b.Run(fmt.Sprintf("era=%s/client=%s/inflight=%d", era, name, inFlight), func(b *testing.B) {
					c, err := clients.Connect(context.Background(), name, clients.Options{Command: serverBin, Args: []string{"-fast"}, Era: era})
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					r := c.(clients.Requester)
					params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
					call := func() error {
						_, err := r.Request(context.Background(), "tools/call", params)
						return err
					}
					var r0, w0, v0, i0 int64
					timeCalls(b, inFlight, call, func() { r0, w0 = syscalls(); v0, i0 = ctxSwitches() })
					v1, i1 := ctxSwitches()
					b.ReportMetric(float64(v1-v0)/float64(b.N), "vcsw/op")
					b.ReportMetric(float64(i1-i0)/float64(b.N), "icsw/op")
					if r1, w1 := syscalls(); r1 > 0 {
						b.ReportMetric(float64(r1-r0)/float64(b.N), "reads/op")
						b.ReportMetric(float64(w1-w0)/float64(b.N), "writes/op")
					}
				})
			}
		}
	}
}

// syscalls is how many read and write system calls the process has made
// (Linux: /proc/self/io; 0, 0 elsewhere).
func syscalls() (reads, writes int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// ctxSwitches sums the voluntary and involuntary context switches of
// every thread of the process (Linux; 0, 0 elsewhere): a thread that
// sleeps and is woken again for each call shows here.
func ctxSwitches() (vol, invol int64) {
	dirs, _ := filepath.Glob("/proc/self/task/*/status")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				vol += n
			case "nonvoluntary_ctxt_switches":
				invol += n
			}
		}
	}
	return
}

// cpuTime is the user plus system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timeCalls warms call up, then times b.N calls of it, one at a time
// (inFlight 1) or inFlight at once, and reports allocations and the
// process's CPU time per call (cpu-ns/op). Each start function runs after
// the warm-up, just before the timed calls (to take other readings).
func timeCalls(b *testing.B, inFlight int, call func() error, start ...func()) {
	for range 1000 { // warm up
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range start {
		f()
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	if inFlight == 1 {
		for i := 0; i < b.N; i++ {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
