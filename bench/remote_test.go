package bench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/remote/embedded"
	"github.com/snodo/snodo/supervisor"
)

// BenchmarkRemote measures a remote call against its floor and its
// parts, in one run, on one NATS server: the same tools/call to a
// one-member pool of the fast server through the pool directly (local),
// a bare nats.go request/reply answered by a subscriber that echoes the
// payload (bare-nats: two messages through the NATS server and nothing
// else), and a remote.Client call to a remote.Host serving the pool
// (remote), at 1 and 16 in flight.
//
// Three processes, so that each side's allocations are its own: the NATS
// server (remote/embedded, in a child process of its own), the host and
// the bare responder (another child), and the callers (this process).
// Each row reports the wall time per call, calls/s, p50 and p99 latency,
// the caller's allocations (allocs/op) and CPU (cpu-ns/op), the host or
// responder's allocations (host-allocs/op) and CPU (host-cpu-ns/op), and
// the NATS server's CPU (nats-cpu-ns/op). The host's CPU leaves out its
// MCP server's (a process of its own).
// The benchmark then logs the goals of issue 30 against the figures of
// this run: met or missed.
//
//	go test -run '^$' -bench 'Remote$' -benchtime 5000x -v   # -v prints the goals
func BenchmarkRemote(b *testing.B) {
	natsURL, natsSrv, stopNATS := startChild(b, "nats")
	defer stopNATS()
	_, host, stopHost := startChild(b, "host", natsURL)
	defer stopHost()

	pool, err := supervisor.NewPool(context.Background(), snodo.Command(serverBin, "-fast"), 1)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	c, err := remote.NewClient(nc, "fast")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	bare, err := nats.Connect(natsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()

	raw := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	var params any = raw // boxed once: the callers' allocations are the calls' own
	calls := map[string]func() error{
		"local": func() error {
			_, err := pool.Request(context.Background(), "tools/call", params)
			return err
		},
		"bare-nats": func() error {
			_, err := bare.RequestWithContext(context.Background(), "bare.call", raw)
			return err
		},
		"remote": func() error {
			_, err := c.Request(context.Background(), "tools/call", params)
			return err
		},
	}
	got := map[string]remoteFigures{}
	for _, inFlight := range []int{1, 16} {
		for _, transport := range []string{"local", "bare-nats", "remote"} {
			name := fmt.Sprintf("transport=%s/inflight=%d", transport, inFlight)
			b.Run(name, func(b *testing.B) {
				var side, server func() (int64, time.Duration)
				if transport != "local" {
					side, server = host.stats, natsSrv.stats
				}
				got[name] = timeRemoteCalls(b, inFlight, calls[transport], side, server)
			})
		}
	}
	logRemoteGoals(b, got)
}

// remoteFigures are one row's figures, for the goals.
type remoteFigures struct {
	p50, callsPerSec, allocs, hostAllocs float64
}

// timeRemoteCalls warms call up, then times b.N calls of it, one at a
// time or inFlight at once, and reports calls/s, p50 and p99 latency,
// this process's allocations and CPU per call, and, with side, the other
// side's (host-allocs/op, host-cpu-ns/op) and the NATS server's CPU
// (nats-cpu-ns/op).
func timeRemoteCalls(b *testing.B, inFlight int, call func() error, side, server func() (int64, time.Duration)) remoteFigures {
	for range 1000 {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	timed := func() error {
		t0 := time.Now()
		err := call()
		if i := next.Add(1) - 1; i < int64(len(lat)) {
			lat[i] = time.Since(t0)
		}
		return err
	}
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var sideMallocs0 int64
	var sideCPU0 time.Duration
	var serverCPU0 time.Duration
	if side != nil {
		sideMallocs0, sideCPU0 = side()
		_, serverCPU0 = server()
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	t0 := time.Now()
	b.ResetTimer()
	if inFlight == 1 {
		for i := 0; i < b.N; i++ {
			if err := timed(); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := timed(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	wall := time.Since(t0)
	cpu := cpuTime() - cpu0
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	n := float64(b.N)
	f := remoteFigures{callsPerSec: n / wall.Seconds(), allocs: float64(m1.Mallocs-m0.Mallocs) / n}
	lat = lat[:min(int(next.Load()), len(lat))]
	slices.Sort(lat)
	if len(lat) > 0 {
		f.p50 = float64(lat[len(lat)/2].Nanoseconds()) / 1e3
		b.ReportMetric(f.p50, "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
	b.ReportMetric(f.callsPerSec, "calls/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	if side != nil {
		mallocs, sideCPU := side()
		f.hostAllocs = float64(mallocs-sideMallocs0) / n
		b.ReportMetric(f.hostAllocs, "host-allocs/op")
		b.ReportMetric(float64((sideCPU-sideCPU0).Nanoseconds())/n, "host-cpu-ns/op")
		_, serverCPU := server()
		b.ReportMetric(float64((serverCPU-serverCPU0).Nanoseconds())/n, "nats-cpu-ns/op")
	}
	return f
}

// logRemoteGoals logs issue 30's goals for remote calls against this
// run's figures.
func logRemoteGoals(b *testing.B, got map[string]remoteFigures) {
	local1, bare1, remote1 := got["transport=local/inflight=1"], got["transport=bare-nats/inflight=1"], got["transport=remote/inflight=1"]
	bare16, remote16 := got["transport=bare-nats/inflight=16"], got["transport=remote/inflight=16"]
	if remote1.p50 == 0 || remote16.callsPerSec == 0 || bare16.callsPerSec == 0 {
		return // a -bench filter left a row out
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	bound := bare1.p50 + local1.p50 + 50
	b.Logf("goal p50 at 1 in flight <= bare + local + 50 µs: %.0f µs against %.0f + %.0f + 50 = %.0f µs: %s",
		remote1.p50, bare1.p50, local1.p50, bound, verdict(remote1.p50 <= bound))
	ratio := remote16.callsPerSec / bare16.callsPerSec
	b.Logf("goal calls/s at 16 in flight >= 0.7x bare: %.0f against %.0f, %.2fx: %s",
		remote16.callsPerSec, bare16.callsPerSec, ratio, verdict(ratio >= 0.7))
	worst := max(remote1.allocs, remote16.allocs, remote1.hostAllocs, remote16.hostAllocs)
	b.Logf("goal allocations per remote call <= 20 each side: caller %.1f / %.1f, host %.1f / %.1f (1 / 16 in flight; bare nats.go caller %.1f, responder %.1f): %s",
		remote1.allocs, remote16.allocs, remote1.hostAllocs, remote16.hostAllocs, bare16.allocs, bare16.hostAllocs, verdict(worst <= 20))
}

// The children of BenchmarkRemote: the test binary run again with
// benchChildEnv set to its role.
const (
	benchChildEnv  = "SNODO_BENCH_CHILD"
	benchServerEnv = "SNODO_BENCH_SERVER"
	// benchProfileEnv, set when running the benchmark, makes the host
	// child write PREFIX.cpu and PREFIX.mem (allocations, sampled) profiles.
	benchProfileEnv = "SNODO_BENCH_HOST_PROFILE"
	// benchNATSProfileEnv does the same for the NATS server's child.
	benchNATSProfileEnv = "SNODO_BENCH_NATS_PROFILE"
)

// profileHost starts the host child's CPU profile and returns what ends
// it and writes the allocation profile.
func profileHost(prefix string) (func(), error) {
	cpu, err := os.Create(prefix + ".cpu")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = cpu.Close()
		if mem, err := os.Create(prefix + ".mem"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(mem, 0)
			_ = mem.Close()
		}
	}, nil
}

// startChild runs this test binary as role (nats or host) with args,
// and returns the first line it prints (the NATS URL, or "ready"), the
// child, and a stop that closes its stdin and waits for it to exit.
func startChild(b *testing.B, role string, args ...string) (string, *benchChild, func()) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), benchChildEnv+"="+role, benchServerEnv+"="+serverBin)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ch := &benchChild{in: stdin, out: bufio.NewReader(stdout)}
	line, err := ch.out.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("bench child %s: %v", role, err)
	}
	return strings.TrimSpace(line), ch, func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}
}

// benchChild is a running child's pipes.
type benchChild struct {
	in  io.Writer
	out *bufio.Reader
}

// stats asks the child for its allocations and CPU time so far.
func (ch *benchChild) stats() (int64, time.Duration) {
	if _, err := io.WriteString(ch.in, "stats\n"); err != nil {
		return 0, 0
	}
	line, err := ch.out.ReadString('\n')
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, 0
	}
	mallocs, _ := strconv.ParseInt(f[0], 10, 64)
	cpu, _ := strconv.ParseInt(f[1], 10, 64)
	return mallocs, time.Duration(cpu)
}

// benchChildMain runs this process as a child of BenchmarkRemote when
// benchChildEnv says so, and exits; it returns otherwise.
func benchChildMain() {
	role := os.Getenv(benchChildEnv)
	if role == "" {
		return
	}
	if err := runBenchChild(role); err != nil {
		fmt.Fprintf(os.Stderr, "bench child %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runBenchChild(role string) error {
	in := bufio.NewScanner(os.Stdin)
	switch role {
	case "nats":
		if prof := os.Getenv(benchNATSProfileEnv); prof != "" {
			stop, err := profileHost(prof)
			if err != nil {
				return err
			}
			defer stop()
		}
		srv, err := embedded.Start(embedded.Options{})
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		fmt.Println(srv.URL())
		for in.Scan() {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Println(m.Mallocs, cpuTime().Nanoseconds())
		}
		return nil
	case "host":
		url := os.Args[len(os.Args)-1]
		if prof := os.Getenv(benchProfileEnv); prof != "" {
			stop, err := profileHost(prof)
			if err != nil {
				return err
			}
			defer stop()
		}
		pool, err := supervisor.NewPool(context.Background(), snodo.Command(os.Getenv(benchServerEnv), "-fast"), 1)
		if err != nil {
			return err
		}
		h, err := remote.NewHost(context.Background(), url, remote.Serve("fast", pool))
		if err != nil {
			return err
		}
		defer func() { _ = h.Close(); <-h.Done() }()
		responder, err := nats.Connect(url)
		if err != nil {
			return err
		}
		defer responder.Close()
		if _, err := responder.QueueSubscribe("bare.call", "bare", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			return err
		}
		if err := responder.Flush(); err != nil {
			return err
		}
		fmt.Println("ready")
		for in.Scan() {
			switch in.Text() {
			case "stats":
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				fmt.Println(m.Mallocs, cpuTime().Nanoseconds())
			default:
				fmt.Println("?")
			}
		}
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}
