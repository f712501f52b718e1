package main

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/snodo/snodo/bench/internal/remotebench"
)

// The remote calls section of the report lies between these markers, so
// that -only remote can measure it again alone.
const (
	remoteBegin = "<!-- remote:begin (make bench-compare writes this section; make bench-remote rewrites it alone) -->\n"
	remoteEnd   = "<!-- remote:end -->\n"
)

// remoteKey is the one series of the remote measurement: each run
// measures every row (package remotebench), its metrics named by
// remoteMetric.
var remoteKey = key{measure: mRemote, client: "remote"}

// remoteInFlight are the calls in flight the remote rows are measured at.
var remoteInFlight = []int{1, 16}

// remoteMetric names a metric of one row of the remote measurement.
func remoteMetric(transport string, inFlight int, metric string) string {
	return remotebench.Row(transport, inFlight) + ":" + metric
}

// measureRemote is one run of the remote measurement: the NATS server and
// the host as children of this child, every row measured once (j.Count
// calls at 1 in flight, four times as many at 16; bare-pool at 1 in flight
// only), the order of the ways rotated from run to run (j.Run) so that
// drift on the machine does not favour one of them.
func measureRemote(j job) (map[string]float64, error) {
	rig, err := remotebench.Start(j.Server)
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	order := remotebench.Ways(remotebench.BarePoolInFlight) // every way
	k := j.Run % len(order)
	order = append(order[k:], order[:k]...)
	res := map[string]float64{}
	got := map[string]remotebench.Figures{}
	for _, transport := range order {
		if err := rig.Warm(transport, j.Count/4); err != nil {
			return nil, err
		}
	}
	for _, inFlight := range remoteInFlight {
		n := j.Count
		if inFlight > 1 {
			n *= 4
		}
		for _, transport := range order {
			if !slices.Contains(remotebench.Ways(inFlight), transport) {
				continue
			}
			f, err := rig.Measure(transport, n, inFlight, remotebench.Hooks{})
			if err != nil {
				return nil, err
			}
			got[remotebench.Row(transport, inFlight)] = f
			m := func(name string, v float64) { res[remoteMetric(transport, inFlight, name)] = v }
			m("p50_us", f.P50)
			m("p99_us", f.P99)
			m("calls", f.CallsPerSec)
			m("allocs", f.Allocs)
			m("cpu_us", f.CPU/1e3)
			if transport != remotebench.Local {
				m("host_allocs", f.HostAllocs)
				m("host_cpu_us", f.HostCPU/1e3)
				m("nats_cpu_us", f.NATSCPU/1e3)
			}
		}
	}
	for _, transport := range order {
		if !slices.Contains(remotebench.Transports, transport) {
			continue // the p50 goal's terms only
		}
		p50, err := rig.Paced(transport, max(j.Count/3, 100))
		if err != nil {
			return nil, err
		}
		res[remoteMetric(transport, 1, "paced_p50_us")] = p50
	}
	if l, b, rm := res[remoteMetric(remotebench.Local, 1, "paced_p50_us")], res[remoteMetric(remotebench.Bare, 1, "paced_p50_us")], res[remoteMetric(remotebench.Remote, 1, "paced_p50_us")]; l > 0 && b > 0 {
		res["paced_over_bound_us"] = rm - remotebench.P50Bound(b, l)
	}
	for i, g := range remotebench.Goals(got) {
		res[fmt.Sprintf("goal%d_met", i)] = map[bool]float64{true: 1}[g.Met]
	}
	local1, bare1, remote1 := got[remotebench.Row(remotebench.Local, 1)], got[remotebench.Row(remotebench.Bare, 1)], got[remotebench.Row(remotebench.Remote, 1)]
	res["p50_bound_us"] = remotebench.P50Bound(bare1.P50, local1.P50)
	res["p50_over_bound_us"] = remote1.P50 - res["p50_bound_us"]
	if over, remoteOver, ok := remotebench.BarePoolGap(got); ok {
		res["barepool_over_bound_us"], res["remote_over_barepool_us"] = over, remoteOver
	}
	// Issue 41's measure: remote against bare + pool call, paired.
	pr, err := rig.Pair(remotebench.Remote, remotebench.BarePool, max(j.Count, 1000))
	if err != nil {
		return nil, err
	}
	res["paired_us"], res["paired_q1_us"], res["paired_q3_us"] = pr.Diff, pr.DiffQ1, pr.DiffQ3
	res[fmt.Sprintf("goal%d_met", pairedGoal)] = map[bool]float64{true: 1}[pr.Diff <= remotebench.PairedGoal]
	caller, host, err := rig.Split(max(j.Count/3, 1000))
	if err != nil {
		return nil, err
	}
	res["paired_caller_us"], res["paired_host_us"] = caller.Diff, host.Diff
	if bare16 := got[remotebench.Row(remotebench.Bare, 16)]; bare16.CallsPerSec > 0 {
		res["ratio16"] = got[remotebench.Row(remotebench.Remote, 16)].CallsPerSec / bare16.CallsPerSec
	}
	return res, nil
}

// renderRemote is the remote calls section, markers included.
func renderRemote(s settings, r *results) []byte {
	var b bytes.Buffer
	notes := &footnotes{}
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("%s", remoteBegin)
	p("## Remote calls over NATS\n\n")
	p("Measured %s with snodo %s, %d run(s) of %d calls at 1 in flight and %d at 16 per row; load average %s at the end. "+
		"The same `tools/call` to a one-member pool of the fast server three ways, in one run and on one NATS server (run in process, `internal/natsembed`): "+
		"through the pool directly (local pool), as a bare nats.go request/reply answered by a subscriber that echoes the payload "+
		"(bare nats.go: two messages through the NATS server and nothing else, the floor of any call over NATS), and through a `remote.Client` "+
		"to a `remote.Host` serving the pool; and at 1 in flight only, bare request/reply whose subscriber makes the same call on the host's pool before it answers "+
		"(bare nats.go + pool call: a remote call's hops with nothing of package `remote` between them, so the least any remote call can cost; it answers one call at a time). "+
		"The NATS server and the host (with the bare responders beside it) are processes of their own, "+
		"so each side's allocations and CPU are its own; the host's CPU leaves out its MCP server's. The order of the ways rotates from run to run "+
		"(`bench/internal/remotebench`; `BenchmarkRemote` measures the same rows).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), snodoVersion(), s.remoteRuns, s.remoteCalls, 4*s.remoteCalls, loadAvg())
	p("| | p50 µs, 1 in flight | p99 µs, 1 in flight | calls/s, 16 in flight | × bare | p50 µs, 16 in flight | p99 µs, 16 in flight | allocs/call, caller | allocs/call, host | CPU µs/call at 16: caller | host | NATS server |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	names := map[string]string{remotebench.Local: "local pool", remotebench.Bare: "bare nats.go request/reply", remotebench.Remote: "`remote.Client`",
		remotebench.BarePool: "bare nats.go + pool call"}
	for _, t := range remotebench.Transports {
		m := func(inFlight int, name string) string {
			return r.cell(remoteKey, remoteMetric(t, inFlight, name), human, notes)
		}
		ratio := "—"
		if t != remotebench.Bare {
			ratio = statCell(r.remoteRatios(t, remotebench.Bare, 16, "calls"), ratioFmt, notes, r.errs[remoteKey])
		}
		host := func(inFlight int, name string) string {
			if t == remotebench.Local {
				return "—"
			}
			return m(inFlight, name)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", names[t],
			m(1, "p50_us"), m(1, "p99_us"), m(16, "calls"), ratio, m(16, "p50_us"), m(16, "p99_us"),
			m(1, "allocs"), host(1, "host_allocs"), m(16, "cpu_us"), host(16, "host_cpu_us"), host(16, "nats_cpu_us"))
	}
	bp := func(name string) string {
		return r.cell(remoteKey, remoteMetric(remotebench.BarePool, remotebench.BarePoolInFlight, name), human, notes)
	}
	p("| %s | %s | %s | — | — | — | — | %s | %s | — | — | — |\n", names[remotebench.BarePool], bp("p50_us"), bp("p99_us"), bp("allocs"), bp("host_allocs"))
	p("\nAllocations are per call at 1 in flight, every goroutine of the process counted (`runtime.MemStats`); the bare rows' host column is their responder's. CPU is user+system time (`getrusage`) of each process over the phase, per call.\n\n")
	p("### snodo against the remote goals\n\n")
	for _, g := range remoteGoals(r) {
		p("- %s\n", g)
	}
	p("\n%s\n\n%s\n\n%s\n\n", barePoolLine(r), splitLine(r), pacedLine(r))
	notes.write(&b)
	p("%s", remoteEnd)
	return b.Bytes()
}

// remoteRatios is, run by run, a metric of one row over another's.
func (r *results) remoteRatios(t, other string, inFlight int, metric string) []float64 {
	var vs []float64
	for _, m := range r.runs[remoteKey] {
		a, ok1 := m[remoteMetric(t, inFlight, metric)]
		b, ok2 := m[remoteMetric(other, inFlight, metric)]
		if ok1 && ok2 && b != 0 {
			vs = append(vs, a/b)
		}
	}
	return vs
}

func statCell(vs []float64, f func(float64) string, notes *footnotes, why string) string {
	if st, ok := summarize(vs); ok {
		return st.format(f)
	}
	return notes.na(why)
}

// remoteGoals are issue 30's goals for remote calls, each met or missed
// with its figures: medians over the runs, and in how many runs it was
// met.
func remoteGoals(r *results) []string {
	runsMet := func(i int) string {
		vs := r.values(remoteKey, fmt.Sprintf("goal%d_met", i))
		met := 0
		for _, v := range vs {
			if v == 1 {
				met++
			}
		}
		return fmt.Sprintf("met in %d of %d runs", met, len(vs))
	}
	med := func(t string, inFlight int, metric string) (float64, bool) {
		st, ok := summarize(r.values(remoteKey, remoteMetric(t, inFlight, metric)))
		return st.med, ok
	}
	us := func(v float64) string { return fmt.Sprintf("%.0f µs", v) }
	var out []string
	remote1, ok1 := med(remotebench.Remote, 1, "p50_us")
	bare1, ok2 := med(remotebench.Bare, 1, "p50_us")
	local1, ok3 := med(remotebench.Local, 1, "p50_us")
	over, ok4 := summarize(r.values(remoteKey, "p50_over_bound_us"))
	name := "30: remote p50 at 1 in flight ≤ bare request/reply + a local call + 50 µs"
	if ok1 && ok2 && ok3 && ok4 {
		bound := remotebench.P50Bound(bare1, local1)
		out = append(out, name+": "+verdict(over.med <= 0, fmt.Sprintf("remote's p50 minus its own run's bound: %s, %s (medians over the runs: remote %s, bound %s + %s + 50 = %s)",
			over.format(signedUs), runsMet(0), us(remote1), us(bare1), us(local1), us(bound))))
	} else {
		out = append(out, name+": n/a")
	}
	name = fmt.Sprintf("30: remote calls/s at 16 in flight ≥ %.1f× bare nats.go's", remotebench.ThroughputGoal)
	if st, ok := summarize(r.values(remoteKey, "ratio16")); ok {
		rc, _ := med(remotebench.Remote, 16, "calls")
		bc, _ := med(remotebench.Bare, 16, "calls")
		out = append(out, name+": "+verdict(st.med >= remotebench.ThroughputGoal, fmt.Sprintf("%s (%s against %s calls/s, medians; %s)",
			st.format(ratioFmt), human(rc), human(bc), runsMet(1))))
	} else {
		out = append(out, name+": n/a")
	}
	name = fmt.Sprintf("30: at most %d allocations per remote call, caller and host each", remotebench.AllocsGoal)
	var worst []float64
	for _, m := range r.runs[remoteKey] {
		w, seen := 0.0, false
		for _, inFlight := range remoteInFlight {
			for _, metric := range []string{"allocs", "host_allocs"} {
				if v, ok := m[remoteMetric(remotebench.Remote, inFlight, metric)]; ok {
					w, seen = max(w, v), true
				}
			}
		}
		if seen {
			worst = append(worst, w)
		}
	}
	if st, ok := summarize(worst); ok {
		caller, _ := med(remotebench.Remote, 1, "allocs")
		host, _ := med(remotebench.Remote, 1, "host_allocs")
		out = append(out, name+": "+verdict(st.med <= remotebench.AllocsGoal, fmt.Sprintf("caller %s, host %s at 1 in flight; the most on either side at 1 or 16 in flight %s (%s)",
			human(caller), human(host), st.format(human), runsMet(2))))
	} else {
		out = append(out, name+": n/a")
	}
	name = fmt.Sprintf("41: remote over bare NATS + pool call, paired ≤ %d µs", remotebench.PairedGoal)
	if st, ok := summarize(r.values(remoteKey, "paired_us")); ok {
		q1, _ := summarize(r.values(remoteKey, "paired_q1_us"))
		q3, _ := summarize(r.values(remoteKey, "paired_q3_us"))
		out = append(out, name+": "+verdict(st.med <= remotebench.PairedGoal, fmt.Sprintf("%s, the median of each run's pair-by-pair differences "+
			"(a remote call and a bare + pool call in turn, the order swapped every pair; quartiles %s and %s, medians over the runs; %s)",
			st.format(signedUs), signedUs(q1.med), signedUs(q3.med), runsMet(pairedGoal))))
	} else {
		out = append(out, name+": n/a")
	}
	return out
}

// splitLine reports the paired measure cut in two (remotebench.Split):
// not a goal, where its µs go.
func splitLine(r *results) string {
	caller, ok1 := summarize(r.values(remoteKey, "paired_caller_us"))
	host, ok2 := summarize(r.values(remoteKey, "paired_host_us"))
	if !ok1 || !ok2 {
		return "The paired measure's split: n/a."
	}
	return fmt.Sprintf("Not a goal, where the paired measure goes: the caller's share (`remote.Client` against nats.go's request/reply sending the same request "+
		"to the same host, paired) %s; the host's and the wire's (that request against bare nats.go + pool call, paired) %s.",
		caller.format(signedUs), host.format(signedUs))
}

// pairedGoal is the paired goal's index among the goals of a run
// (goalN_met), after remotebench.Goals' three.
const pairedGoal = 3

// barePoolLine reports the bare-pool row against the p50 goal: not a
// goal, the least any remote call costs at 1 in flight, against the
// goal's bound, and how far remote.Client lies over it.
func barePoolLine(r *results) string {
	over, met, runs, ok1 := r.overBound("barepool_over_bound_us")
	remoteOver, ok2 := summarize(r.values(remoteKey, "remote_over_barepool_us"))
	if !ok1 || !ok2 {
		return "Bare nats.go + pool call: n/a."
	}
	return fmt.Sprintf("Not a goal, the p50 goal's floor: bare nats.go + pool call, a remote call's hops with nothing of package `remote` between them, "+
		"lies %s from the goal's bound (at or under it in %d of %d runs); `remote.Client` lies %s over it.",
		over.format(signedUs), met, runs, remoteOver.format(signedUs))
}

// overBound summarizes a remote metric that is, run by run, a figure
// minus its bound, and counts the runs at or under the bound.
func (r *results) overBound(metric string) (over stat, atOrUnder, runs int, ok bool) {
	vs := r.values(remoteKey, metric)
	if over, ok = summarize(vs); !ok {
		return stat{}, 0, 0, false
	}
	for _, v := range vs {
		if v <= 0 {
			atOrUnder++
		}
	}
	return over, atOrUnder, len(vs), true
}

// signedUs formats a difference in µs with its sign.
func signedUs(v float64) string { return fmt.Sprintf("%+.0f µs", v) }

// pacedLine reports the three ways at 1 in flight paced (Rig.Paced):
// not a goal, the p50 goal's terms each measured at a remote call's pace.
func pacedLine(r *results) string {
	var p50 []string
	for _, t := range remotebench.Transports {
		st, ok := summarize(r.values(remoteKey, remoteMetric(t, 1, "paced_p50_us")))
		if !ok {
			return "Paced calls: n/a."
		}
		p50 = append(p50, st.format(func(v float64) string { return fmt.Sprintf("%.0f µs", v) }))
	}
	over, met, runs, ok := r.overBound("paced_over_bound_us")
	if !ok {
		return "Paced calls: n/a."
	}
	return fmt.Sprintf("Not a goal, the same terms at a remote call's pace: each way measured again at 1 in flight with %d µs of idle before each call, "+
		"as a remote call's pool call finds its MCP server idle after the call's NATS hops (`remotebench.Paced`). p50: local pool %s, bare nats.go %s, `remote.Client` %s; "+
		"remote against bare + local + 50 µs, so measured: %s (at or under it in %d of %d runs).",
		remotebench.Pace.Microseconds(), p50[0], p50[1], p50[2], over.format(signedUs), met, runs)
}

// spliceSection puts section in place of report's section between begin
// and end, or, when it has none yet, before the first of the headings
// found (else at its end).
func spliceSection(report, section []byte, begin, end string, before ...string) []byte {
	if i := bytes.Index(report, []byte(begin)); i >= 0 {
		if j := bytes.Index(report[i:], []byte(end)); j >= 0 {
			return slices.Concat(report[:i], section, report[i+j+len(end):])
		}
	}
	for _, at := range before {
		if i := bytes.Index(report, []byte(at)); i >= 0 {
			return slices.Concat(report[:i], section, []byte("\n"), report[i:])
		}
	}
	return append(report, section...)
}
