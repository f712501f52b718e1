package bench_test

import (
	"os"
	"slices"
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
// between them, the least any remote call can cost). It then pairs remote
// calls with bare-pool calls (issue 41's measure), and splits that
// difference at the remote call's own request sent by nats.go
// (remotebench.NATSCaller): the caller's share and the host's.
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
	caller, host, err := rig.Split(3000)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("of which the caller (remote against nats.go request/reply of the same request to the same host), paired: %+.1f µs (quartiles %+.1f, %+.1f); "+
		"the host and the wire (that request against bare NATS + pool call), paired: %+.1f µs (quartiles %+.1f, %+.1f)",
		caller.Diff, caller.DiffQ1, caller.DiffQ3, host.Diff, host.DiffQ1, host.DiffQ3)
	if over, remoteOver, ok := remotebench.BarePoolGap(got); ok {
		b.Logf("not a goal: bare-pool (bare request/reply + the pool call) %+.0f µs from the p50 bound; remote %+.0f µs over bare-pool", over, remoteOver)
	}
}

// BenchmarkRemoteAB compares two builds of the host, call by call: with
// SNODO_BENCH_HOST_B naming another build of this test binary (go test
// -c at another commit), it pairs remote calls to this build's host (a)
// with calls to that build's (b), both on one NATS server and called
// from this process, b.N pairs in rounds of 1,000 with the order of the
// two hosts swapped every pair, and logs the median of a − b per round
// and over all pairs; then, at 16 in flight, the ratios of calls/s and
// of host CPU per call over ten rounds of blocks. Without it, it is
// skipped. Run it both ways round (a the new build, then the old): the
// host of the build the caller does not run reads some 9 µs slower
// whatever its code (remotebench.HostBEnv), so half the difference of
// the two runs is the builds' own.
//
//	go test -c -o /tmp/new.test    # and /tmp/old.test at the other commit
//	SNODO_BENCH_HOST_B=/tmp/old.test /tmp/new.test -test.run '^$' -test.bench 'RemoteAB$' -test.benchtime 6000x -test.v
//	SNODO_BENCH_HOST_B=/tmp/new.test /tmp/old.test -test.run '^$' -test.bench 'RemoteAB$' -test.benchtime 6000x -test.v
//
// With SNODO_BENCH_HOST_B=same, b is a second name served by a's own host
// process, from the same pool (remotebench.HostBSame): the two read alike,
// so a variant of the host's code switched on by the served name
// ("remote-b") is measured in one run, with no second build.
func BenchmarkRemoteAB(b *testing.B) {
	if os.Getenv(remotebench.HostBEnv) == "" {
		b.Skip(remotebench.HostBEnv + " is not set")
	}
	if b.N < 1000 {
		return // the benchmark's first run, to size b.N: the rounds set their own
	}
	rig, err := remotebench.Start(serverBin)
	if err != nil {
		b.Fatal(err)
	}
	defer rig.Close()
	for _, way := range []string{remotebench.Remote, remotebench.RemoteB} {
		if err := rig.Warm(way, 1000); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var diffs []float64
	for done := 0; done < b.N; done += 1000 {
		pr, err := rig.Pair(remotebench.Remote, remotebench.RemoteB, min(1000, b.N-done))
		if err != nil {
			b.Fatal(err)
		}
		diffs = append(diffs, pr.Diff)
		b.Logf("a − b: %+.1f µs (quartiles %+.1f, %+.1f; a %.0f µs, b %.0f µs; %d pairs)", pr.Diff, pr.DiffQ1, pr.DiffQ3, pr.A50, pr.B50, pr.Pairs)
	}
	slices.Sort(diffs)
	b.Logf("a − b over %d rounds: median %+.1f µs, from %+.1f to %+.1f", len(diffs), diffs[len(diffs)/2], diffs[0], diffs[len(diffs)-1])
	// At 16 in flight: blocks of 2,000 calls each way in turn, the order
	// swapped every round; the medians of the ratios a / b.
	var rates, cpus []float64
	for i := range 10 {
		ways := []string{remotebench.Remote, remotebench.RemoteB}
		if i%2 == 1 {
			ways[0], ways[1] = ways[1], ways[0]
		}
		got := map[string]remotebench.Figures{}
		for _, way := range ways {
			f, err := rig.Measure(way, 2000, 16, remotebench.Hooks{})
			if err != nil {
				b.Fatal(err)
			}
			got[way] = f
		}
		fa, fb := got[remotebench.Remote], got[remotebench.RemoteB]
		rates = append(rates, fa.CallsPerSec/fb.CallsPerSec)
		cpus = append(cpus, fa.HostCPU/fb.HostCPU)
	}
	slices.Sort(rates)
	slices.Sort(cpus)
	b.Logf("16 in flight, a / b over %d rounds: calls/s %.2f× (%.2f–%.2f), host CPU per call %.2f× (%.2f–%.2f)",
		len(rates), rates[len(rates)/2], rates[0], rates[len(rates)-1], cpus[len(cpus)/2], cpus[0], cpus[len(cpus)-1])
}
