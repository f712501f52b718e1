package bench_test

import (
	"strconv"
	"testing"

	"github.com/snodo/snodo/bench/internal/remotebench"
)

// BenchmarkRemote measures a remote call against its floor and its
// parts, in one run, on one NATS server (package remotebench): the same
// tools/call to a one-member pool of the fast server through the pool
// directly (local), a bare nats.go request/reply answered by a subscriber
// that echoes the payload (bare-nats: two messages through the NATS
// server and nothing else), and a remote.Client call to a remote.Host
// serving the pool (remote), at 1 and 16 in flight; and at 1 in flight,
// bare request/reply whose subscriber makes the same pool call before it
// answers (bare-pool: a remote call's hops with nothing of package remote
// between them, the least any remote call can cost).
//
// Three processes, so that each side's allocations are its own: the NATS
// server, the host and the bare responder, and the callers (this
// process). Each row reports the wall time per call, calls/s, p50 and p99
// latency, the caller's allocations (allocs/op) and CPU (cpu-ns/op), the
// host or responder's allocations (host-allocs/op) and CPU
// (host-cpu-ns/op), and the NATS server's CPU (nats-cpu-ns/op). The
// host's CPU leaves out its MCP server's (a process of its own).
// The benchmark then logs the goals of issue 30 against the figures of
// this run: met or missed. make bench-compare measures the same rows.
//
//	go test -run '^$' -bench 'Remote$' -benchtime 5000x -v   # -v prints the goals
//
// SNODO_BENCH_HOST_PROFILE=PREFIX and SNODO_BENCH_NATS_PROFILE=PREFIX
// make the host's and the NATS server's children write CPU and allocation
// profiles (PREFIX.cpu, PREFIX.mem); with SNODO_BENCH_BLOCK_PROFILE=1,
// blocking and mutex profiles too (PREFIX.block, PREFIX.mutex).
func BenchmarkRemote(b *testing.B) {
	rig, err := remotebench.Start(serverBin)
	if err != nil {
		b.Fatal(err)
	}
	defer rig.Close()
	got := map[string]remotebench.Figures{}
	for _, inFlight := range []int{1, 16} {
		for _, transport := range remotebench.Ways(inFlight) {
			b.Run("transport="+transport+"/inflight="+strconv.Itoa(inFlight), func(b *testing.B) {
				if err := rig.Warm(transport, 1000); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				f, err := rig.Measure(transport, b.N, inFlight, remotebench.Hooks{Start: b.ResetTimer, Stop: b.StopTimer})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(f.P50, "p50-µs")
				b.ReportMetric(f.P99, "p99-µs")
				b.ReportMetric(f.CallsPerSec, "calls/s")
				b.ReportMetric(f.CPU, "cpu-ns/op")
				b.ReportMetric(f.Reads+f.Writes, "syscalls/op")
				if transport != remotebench.Local {
					b.ReportMetric(f.HostAllocs, "host-allocs/op")
					b.ReportMetric(f.HostCPU, "host-cpu-ns/op")
					b.ReportMetric(f.HostReads+f.HostWrites, "host-syscalls/op")
					b.ReportMetric(f.NATSCPU, "nats-cpu-ns/op")
					b.ReportMetric(f.NATSReads+f.NATSWrites, "nats-syscalls/op")
				}
				got[remotebench.Row(transport, inFlight)] = f
			})
		}
	}
	if len(got) < 2*len(remotebench.Transports) {
		return // a -bench filter left a row out
	}
	for _, g := range remotebench.Goals(got) {
		verdict := "missed"
		if g.Met {
			verdict = "met"
		}
		b.Logf("goal %s: %s: %s", g.Name, g.Detail, verdict)
	}
	pr, err := rig.Pair(remotebench.Remote, remotebench.BarePool, 3000)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("remote over bare NATS + pool call, paired: %+.1f µs (quartiles %+.1f, %+.1f; %d pairs; goal ≤ %d µs)",
		pr.Diff, pr.DiffQ1, pr.DiffQ3, pr.Pairs, remotebench.PairedGoal)
	if over, remoteOver, ok := remotebench.BarePoolGap(got); ok {
		b.Logf("not a goal: bare-pool (bare request/reply + the pool call) %+.0f µs from the p50 bound; remote %+.0f µs over bare-pool", over, remoteOver)
	}
}
