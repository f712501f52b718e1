// Package remotebench measures remote calls over NATS against their
// floor and their parts, in one run, on one NATS server: the same
// tools/call to a one-member pool of the fast bench server through the
// pool directly (Local), as a bare nats.go request/reply answered by a
// subscriber that echoes the payload (Bare: two messages through the NATS
// server and nothing else), and through a remote.Client to a remote.Host
// serving the pool (Remote). A fourth way, BarePool, is measured at 1 in
// flight only: bare request/reply whose subscriber makes the same call on
// the host's pool before it answers, the least any remote call can cost.
// A fifth, NATSCaller, is only paired (Pair): the remote call's own
// request sent to the host by nats.go's request/reply, which splits a
// remote call's cost over BarePool into the caller's and the host's.
//
// Three processes, so that each side's allocations are its own: the NATS
// server (internal/natsembed), the host with the bare responder beside it,
// and the callers (the process that calls Start). The first two are the
// calling binary run again: it must call ChildMain first thing in main
// (or TestMain).
//
// BenchmarkRemote (bench/remote_test.go) and make bench-compare
// (bench/cmd/compare) both measure through it.
package remotebench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
)

// The ways a call is made.
const (
	Local  = "local"     // through the pool directly
	Bare   = "bare-nats" // bare nats.go request/reply, echoed
	Remote = "remote"    // remote.Client to remote.Host

	// BarePool is bare request/reply whose subscriber, beside the host,
	// makes the same call on the host's own pool (one MCP server for both
	// ways, so that a pair's two calls differ only in the path to it)
	// before it answers, on its delivery goroutine: the hops of a remote
	// call (caller, NATS server, host, MCP server, and back) with nothing
	// of package remote between them, so the least any remote call can
	// cost. It answers one call at
	// a time, so it is measured at 1 in flight only (BarePoolInFlight).
	BarePool = "bare-pool"

	// RemoteB is Remote to the host of HostBEnv's build, when set.
	RemoteB = "remote-b"

	// NATSCaller is a remote call made without package remote's caller:
	// the request a remote.Client sends (its subject, header and
	// payload, captured off the NATS server at Start) sent to the host as
	// it is by nats.go's request/reply, on the client's NATS connection.
	// Paired, Remote against it is the caller's share of a remote call's
	// cost, and it against BarePool the host's and the wire's (Split).
	NATSCaller = "nats-caller"
)

// Transports are the three ways measured at every number of calls in
// flight, the parts first.
var Transports = []string{Local, Bare, Remote}

// BarePoolInFlight is the one number of calls in flight BarePool is
// measured at.
const BarePoolInFlight = 1

// Ways are the ways measured at inFlight calls in flight: Transports,
// and BarePool at BarePoolInFlight.
func Ways(inFlight int) []string {
	if inFlight == BarePoolInFlight {
		return append(slices.Clone(Transports), BarePool)
	}
	return Transports
}

// BarePool's subscriber answers on barePoolSubject; a pool call that
// failed answers with its error in the barePoolErr header.
const (
	barePoolSubject = "barepool.call"
	barePoolErr     = "BarePool-Error"
)

// The children: this binary run again with childEnv set to its role.
const (
	childEnv  = "SNODO_BENCH_CHILD"
	serverEnv = "SNODO_BENCH_SERVER"
	// HostProfileEnv, set when measuring, makes the host child write
	// PREFIX.cpu and PREFIX.mem (allocations) profiles.
	HostProfileEnv = "SNODO_BENCH_HOST_PROFILE"
	// NATSProfileEnv does the same for the NATS server's child.
	NATSProfileEnv = "SNODO_BENCH_NATS_PROFILE"
	// HostBEnv names another build of the calling binary (go test -c of
	// another commit) whose host child serves a second name, RemoteB,
	// beside the first, on the same NATS server: Pair(Remote, RemoteB)
	// then compares two hosts' code call by call. Run each pair of builds
	// both ways round and take half the difference: the host of the other
	// build reads some 9 µs slower whatever its code, where two hosts of
	// one build read alike (the caller, the NATS server and the first
	// host run one binary, whose code the CPUs' caches hold once for all
	// three).
	//
	// HostBSame instead makes the first host serve RemoteB as well, from
	// the same pool (one process, one binary, one MCP server): then Pair
	// (Remote, RemoteB) compares two served names of one host, which
	// read alike (A/A within ±1 µs at the median of 20 rounds of 1,000
	// pairs) until a variant of the host's code is switched on by the
	// served name, an experiment's change that needs no second build
	// and has no binaries' bias. One name may still read 1–2 µs slower
	// than the other in a run: put the variant on each name in turn and
	// take half the difference.
	HostBEnv = "SNODO_BENCH_HOST_B"
	// HostBSame is the HostBEnv value for RemoteB served by the first
	// host (above).
	HostBSame = "same"
	// hostNameEnv is the name a host child serves (default "fast"); a
	// host child serving another name runs no bare responders.
	hostNameEnv = "SNODO_BENCH_HOST_NAME"
	// BlockProfileEnv, set to 1 as well, makes those children write
	// PREFIX.block and PREFIX.mutex profiles too (at a cost in CPU that
	// skews the CPU profile: take them in a run of their own).
	BlockProfileEnv = "SNODO_BENCH_BLOCK_PROFILE"
)

// Rig is the three processes, connected.
type Rig struct {
	natsSrv, host *child
	hostB         *child // HostBEnv's host, or nil
	stops         []func()
	pool          *supervisor.Pool
	nc, bare      *nats.Conn
	client        *remote.Client
	calls         map[string]func() error
	sent          *nats.Msg // a remote.Client's request, as captured (NATSCaller)
}

// Start starts the NATS server and the host as children (this binary run
// again, serving serverBin's fast server), and connects the callers.
func Start(serverBin string) (*Rig, error) {
	r := &Rig{}
	fail := func(err error) (*Rig, error) {
		r.Close()
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	natsURL, natsSrv, stop, err := startChild(self, "nats", serverBin, nil)
	if err != nil {
		return fail(err)
	}
	r.natsSrv = natsSrv
	r.stops = append(r.stops, stop)
	_, host, stop, err := startChild(self, "host", serverBin, nil, natsURL)
	if err != nil {
		return fail(err)
	}
	r.host = host
	r.stops = append(r.stops, stop)
	if binB := os.Getenv(HostBEnv); binB != "" && binB != HostBSame {
		_, hostB, stop, err := startChild(binB, "host", serverBin, []string{hostNameEnv + "=" + RemoteB}, natsURL)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", HostBEnv, err))
		}
		r.hostB = hostB
		r.stops = append(r.stops, stop)
	}
	if r.pool, err = supervisor.NewPool(context.Background(), snodo.Command(serverBin, "-fast"), 1); err != nil {
		return fail(err)
	}
	if r.nc, err = nats.Connect(natsURL); err != nil {
		return fail(err)
	}
	if r.client, err = remote.NewClient(r.nc, "fast"); err != nil {
		return fail(err)
	}
	if r.bare, err = nats.Connect(natsURL); err != nil {
		return fail(err)
	}
	var clientB *remote.Client
	if os.Getenv(HostBEnv) != "" {
		if clientB, err = remote.NewClient(r.nc, RemoteB); err != nil {
			return fail(err)
		}
	}
	raw := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	var params any = raw // boxed once: the callers' allocations are the calls' own
	r.calls = map[string]func() error{
		Local: func() error {
			_, err := r.pool.Request(context.Background(), "tools/call", params)
			return err
		},
		Bare: func() error {
			_, err := r.bare.RequestWithContext(context.Background(), "bare.call", raw)
			return err
		},
		Remote: func() error {
			_, err := r.client.Request(context.Background(), "tools/call", params)
			return err
		},
		NATSCaller: func() error {
			m, err := r.nc.RequestMsgWithContext(context.Background(), r.sent)
			// A result comes with no header (the client had learnt the
			// era when it was captured); anything else is a failure.
			if err == nil && (len(m.Header) > 0 || bytes.Contains(m.Data, []byte(`"error":`))) {
				err = fmt.Errorf("%s: the host answered %.300q (header %v)", NATSCaller, m.Data, m.Header)
			}
			return err
		},
		RemoteB: func() error {
			if clientB == nil {
				return errors.New(RemoteB + ": " + HostBEnv + " is not set")
			}
			_, err := clientB.Request(context.Background(), "tools/call", params)
			return err
		},
		BarePool: func() error {
			m, err := r.bare.RequestWithContext(context.Background(), barePoolSubject, raw)
			if err == nil && m.Header.Get(barePoolErr) != "" {
				err = errors.New("bare-pool: " + m.Header.Get(barePoolErr))
			}
			return err
		},
	}
	// The client's first calls learn the host's era and ask the hosts
	// what they read (a call's settings in its payload, or in a header
	// only); the calls a second later send what every call after sends.
	for t0 := time.Now(); time.Since(t0) < time.Second; {
		if err := r.calls[Remote](); err != nil {
			return fail(err)
		}
	}
	if r.sent, err = captureCall(natsURL, r.calls[Remote]); err != nil {
		return fail(err)
	}
	return r, nil
}

// captureCall makes one call with call and returns the tools/call request
// it sent, as it went through the NATS server (subject, header and
// payload), read by a subscriber of every subject of its own.
func captureCall(url string, call func() error) (*nats.Msg, error) {
	spy, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	defer spy.Close()
	got := make(chan *nats.Msg, 1)
	if _, err := spy.Subscribe(">", func(m *nats.Msg) {
		if m.Reply != "" && bytes.Contains(m.Data, []byte(`"method":"tools/call"`)) {
			select {
			case got <- m:
			default:
			}
		}
	}); err != nil {
		return nil, err
	}
	if err := spy.Flush(); err != nil {
		return nil, err
	}
	if err := call(); err != nil {
		return nil, err
	}
	select {
	case m := <-got:
		return &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}, nil
	case <-time.After(10 * time.Second):
		return nil, errors.New("capturing a remote call's request: none seen on the NATS server within 10s")
	}
}

// Close stops everything Start started.
func (r *Rig) Close() {
	if r.client != nil {
		_ = r.client.Close()
	}
	if r.nc != nil {
		r.nc.Close()
	}
	if r.bare != nil {
		r.bare.Close()
	}
	if r.pool != nil {
		_ = r.pool.Close()
	}
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
}

// Call is one call the given way (Local, Bare, Remote or BarePool).
func (r *Rig) Call(transport string) func() error { return r.calls[transport] }

// Pace is the gap between calls of Paced: about a remote call's own
// latency, so that between a paced call's hops the processes and their
// CPUs sit idle as long as they do between a remote call's.
const Pace = 250 * time.Microsecond

// Paced makes n calls the given way one at a time, sleeping Pace before
// each, and returns their p50 in µs (the sleeps left out). A call in a
// closed loop finds its processes just woken by the call before; a paced
// one finds them idle, as a remote call's pool call finds its MCP server
// after the call's NATS hops: the p50 bound of issue 30 adds bare's and a
// local call's p50, which this measures at a remote call's pace.
func (r *Rig) Paced(transport string, n int) (float64, error) {
	call := r.calls[transport]
	lat := make([]time.Duration, n)
	for i := range n {
		time.Sleep(Pace)
		c0 := time.Now()
		if err := call(); err != nil {
			return 0, fmt.Errorf("%s: %w", transport, err)
		}
		lat[i] = time.Since(c0)
	}
	slices.Sort(lat)
	return float64(lat[n/2].Nanoseconds()) / 1e3, nil
}

// PairedGoal is the most a remote call may cost over bare request/reply
// plus the pool call (BarePool), paired (Pair), in µs (issue 41).
const PairedGoal = 15

// Paired is what Pair measured: the median and quartiles of the
// differences, pair by pair, and each way's own p50, in µs.
type Paired struct {
	Pairs                int
	Diff, DiffQ1, DiffQ3 float64 // a − b
	A50, B50             float64
}

// Pair calls ways a and b in turn, one call of each, pairs times, the
// order swapped every pair, and returns the median of the differences of
// their latencies (a − b) with its quartiles. Run to run, the machine
// moves a row measured in a block of calls by tens of µs; a pair's two
// calls find it alike, so the median of the differences tells changes of
// about 5 µs.
func (r *Rig) Pair(a, b string, pairs int) (Paired, error) {
	callA, callB := r.calls[a], r.calls[b]
	if callA == nil || callB == nil {
		return Paired{}, fmt.Errorf("pair: unknown way %q or %q", a, b)
	}
	diffs := make([]time.Duration, pairs)
	la, lb := make([]time.Duration, pairs), make([]time.Duration, pairs)
	timed := func(call func() error) (time.Duration, error) {
		c0 := time.Now()
		err := call()
		return time.Since(c0), err
	}
	for i := range pairs {
		var errA, errB error
		if i%2 == 0 {
			la[i], errA = timed(callA)
			lb[i], errB = timed(callB)
		} else {
			lb[i], errB = timed(callB)
			la[i], errA = timed(callA)
		}
		if err := cmp.Or(errA, errB); err != nil {
			return Paired{}, fmt.Errorf("pair %s, %s: %w", a, b, err)
		}
		diffs[i] = la[i] - lb[i]
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	q := func(ds []time.Duration, f float64) float64 {
		slices.Sort(ds)
		return us(ds[int(float64(len(ds)-1)*f)])
	}
	if pairs == 0 {
		return Paired{}, nil
	}
	return Paired{Pairs: pairs, Diff: q(diffs, 0.5), DiffQ1: q(diffs, 0.25), DiffQ3: q(diffs, 0.75), A50: q(la, 0.5), B50: q(lb, 0.5)}, nil
}

// Split is Pair's measure of Remote against BarePool cut in two at
// NATSCaller: Remote against NATSCaller (the caller's share: package
// remote's client against nats.go's request/reply, the same request to
// the same host) and NATSCaller against BarePool (the host's and the
// wire's share: package remote's host and its request's header and
// envelope against a bare responder), pairs pairs each.
func (r *Rig) Split(pairs int) (caller, host Paired, err error) {
	if err = r.Warm(NATSCaller, 200); err != nil {
		return Paired{}, Paired{}, err
	}
	if caller, err = r.Pair(Remote, NATSCaller, pairs); err != nil {
		return Paired{}, Paired{}, err
	}
	if host, err = r.Pair(NATSCaller, BarePool, pairs); err != nil {
		return Paired{}, Paired{}, err
	}
	return caller, host, nil
}

// Figures are one row's figures. Host figures are the host's (the bare
// responders' on the Bare and BarePool rows) and NATS the NATS server's;
// both are zero on the Local row. The host's CPU leaves out its MCP
// server's (a process of its own).
type Figures struct {
	Calls       int
	Wall        time.Duration
	P50, P99    float64 // µs
	CallsPerSec float64
	Allocs      float64 // this process's, per call
	CPU         float64 // this process's, ns per call
	HostAllocs  float64
	HostCPU     float64 // ns per call
	NATSCPU     float64 // ns per call
	// Read and write system calls per call of each process (Linux's
	// /proc/PID/io): a message that leaves in a write of its own costs
	// a system call on each side.
	Reads, Writes, HostReads, HostWrites, NATSReads, NATSWrites float64
}

// Hooks run around the timed calls (a benchmark's timer).
type Hooks struct{ Start, Stop func() }

// Warm makes n calls the given way, untimed.
func (r *Rig) Warm(transport string, n int) error {
	call := r.calls[transport]
	for range n {
		if err := call(); err != nil {
			return fmt.Errorf("%s: %w", transport, err)
		}
	}
	return nil
}

// Measure times n calls the given way, inFlight at once, and takes every
// side's allocations and CPU over them.
func (r *Rig) Measure(transport string, n, inFlight int, h Hooks) (Figures, error) {
	call := r.calls[transport]
	var side, server *child
	if transport != Local {
		side, server = r.host, r.natsSrv
	}
	if transport == RemoteB {
		side = cmp.Or(r.hostB, r.host)
	}
	lat := make([]time.Duration, n)
	var m0, m1 runtime.MemStats
	var side0, server0 childStats
	if side != nil {
		side0, server0 = side.stats(), server.stats()
	}
	r0, w0 := Syscalls()
	runtime.ReadMemStats(&m0)
	if h.Start != nil {
		h.Start()
	}
	cpu0 := CPUTime()
	t0 := time.Now()
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) { firstErr.CompareAndSwap(nil, &err) } // err escapes here only
	worker := func() {
		for {
			i := next.Add(1) - 1
			if i >= int64(n) || firstErr.Load() != nil {
				return
			}
			c0 := time.Now()
			if err := call(); err != nil {
				fail(err)
				return
			}
			lat[i] = time.Since(c0)
		}
	}
	if inFlight <= 1 {
		worker()
	} else {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(worker)
		}
		wg.Wait()
	}
	wall := time.Since(t0)
	cpu := CPUTime() - cpu0
	r1, w1 := Syscalls()
	if h.Stop != nil {
		h.Stop()
	}
	runtime.ReadMemStats(&m1)
	if e := firstErr.Load(); e != nil {
		return Figures{}, fmt.Errorf("%s: %w", transport, *e)
	}
	fn := float64(n)
	f := Figures{Calls: n, Wall: wall, CallsPerSec: fn / wall.Seconds(),
		Allocs: float64(m1.Mallocs-m0.Mallocs) / fn, CPU: float64(cpu.Nanoseconds()) / fn,
		Reads: float64(r1-r0) / fn, Writes: float64(w1-w0) / fn}
	slices.Sort(lat)
	if n > 0 {
		f.P50 = float64(lat[n/2].Nanoseconds()) / 1e3
		f.P99 = float64(lat[n*99/100].Nanoseconds()) / 1e3
	}
	if side != nil {
		side1, server1 := side.stats(), server.stats()
		f.HostAllocs = float64(side1.mallocs-side0.mallocs) / fn
		f.HostCPU = float64(side1.cpu-side0.cpu) / fn
		f.HostReads = float64(side1.reads-side0.reads) / fn
		f.HostWrites = float64(side1.writes-side0.writes) / fn
		f.NATSCPU = float64(server1.cpu-server0.cpu) / fn
		f.NATSReads = float64(server1.reads-server0.reads) / fn
		f.NATSWrites = float64(server1.writes-server0.writes) / fn
	}
	return f, nil
}

// Goal is one of issue 30's goals for remote calls, against one run's
// figures.
type Goal struct {
	Name   string
	Met    bool
	Detail string // the figures it was judged on
}

// Row names a row of figures: its transport and calls in flight.
func Row(transport string, inFlight int) string {
	return fmt.Sprintf("%s/%d", transport, inFlight)
}

// P50Bound is the p50 goal at 1 in flight: bare request/reply plus a
// local call plus 50 µs.
func P50Bound(bare1, local1 float64) float64 { return bare1 + local1 + 50 }

// BarePoolGap is, from one run's figures, how far BarePool's p50 at 1 in
// flight lies over the p50 bound (P50Bound; negative: under it) and how
// far Remote's lies over BarePool's, in µs; ok is false when a row is
// missing.
func BarePoolGap(got map[string]Figures) (barePoolOverBound, remoteOverBarePool float64, ok bool) {
	local1, okL := got[Row(Local, 1)]
	bare1, okB := got[Row(Bare, 1)]
	remote1, okR := got[Row(Remote, 1)]
	barePool1, okP := got[Row(BarePool, BarePoolInFlight)]
	if !okL || !okB || !okR || !okP {
		return 0, 0, false
	}
	return barePool1.P50 - P50Bound(bare1.P50, local1.P50), remote1.P50 - barePool1.P50, true
}

// ThroughputGoal is the least ratio of remote to bare calls/s at 16 in
// flight.
const ThroughputGoal = 0.7

// AllocsGoal is the most allocations per remote call, on each side.
const AllocsGoal = 20

// Goals judges issue 30's goals on one run's figures, keyed by Row.
func Goals(got map[string]Figures) []Goal {
	local1, bare1, remote1 := got[Row(Local, 1)], got[Row(Bare, 1)], got[Row(Remote, 1)]
	bare16, remote16 := got[Row(Bare, 16)], got[Row(Remote, 16)]
	bound := P50Bound(bare1.P50, local1.P50)
	ratio := 0.0
	if bare16.CallsPerSec > 0 {
		ratio = remote16.CallsPerSec / bare16.CallsPerSec
	}
	worst := max(remote1.Allocs, remote16.Allocs, remote1.HostAllocs, remote16.HostAllocs)
	return []Goal{
		{"p50 at 1 in flight <= bare + local + 50 µs", remote1.P50 <= bound,
			fmt.Sprintf("%.0f µs against %.0f + %.0f + 50 = %.0f µs", remote1.P50, bare1.P50, local1.P50, bound)},
		{fmt.Sprintf("calls/s at 16 in flight >= %.1fx bare", ThroughputGoal), ratio >= ThroughputGoal,
			fmt.Sprintf("%.0f against %.0f, %.2fx", remote16.CallsPerSec, bare16.CallsPerSec, ratio)},
		{fmt.Sprintf("allocations per remote call <= %d each side", AllocsGoal), worst <= AllocsGoal,
			fmt.Sprintf("caller %.1f / %.1f, host %.1f / %.1f (1 / 16 in flight; bare nats.go caller %.1f, responder %.1f)",
				remote1.Allocs, remote16.Allocs, remote1.HostAllocs, remote16.HostAllocs, bare16.Allocs, bare16.HostAllocs)},
	}
}

// CPUTime is the user plus system CPU time the process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// child is a running child's pipes.
type child struct {
	mu  sync.Mutex
	in  io.Writer
	out *bufio.Reader
}

// startChild runs exe (this binary, or HostBEnv's build of it) as role
// (nats or host) with args and env added to the environment, and
// returns the first line it prints (the NATS URL, or "ready"), the child,
// and a stop that closes its stdin and waits for it to exit.
func startChild(exe, role, serverBin string, env []string, args ...string) (string, *child, func(), error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), childEnv+"="+role, serverEnv+"="+serverBin), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	ch := &child{in: stdin, out: bufio.NewReader(stdout)}
	line, err := ch.out.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", nil, nil, fmt.Errorf("bench child %s: %w", role, err)
	}
	return strings.TrimSpace(line), ch, func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}, nil
}

// childStats are a child's allocations, CPU time (ns) and read and write
// system calls so far.
type childStats struct{ mallocs, cpu, reads, writes int64 }

// stats asks the child for its childStats.
func (ch *child) stats() childStats {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var st childStats
	if _, err := io.WriteString(ch.in, "stats\n"); err != nil {
		return st
	}
	line, err := ch.out.ReadString('\n')
	if err != nil {
		return st
	}
	f := strings.Fields(line)
	if len(f) != 4 {
		return st
	}
	for i, v := range []*int64{&st.mallocs, &st.cpu, &st.reads, &st.writes} {
		*v, _ = strconv.ParseInt(f[i], 10, 64)
	}
	return st
}

// ChildMain runs this process as a child of a Rig when the environment
// says so, and exits; it returns otherwise.
func ChildMain() {
	role := os.Getenv(childEnv)
	if role == "" {
		return
	}
	if err := runChild(role); err != nil {
		fmt.Fprintf(os.Stderr, "bench child %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// profile starts the child's CPU profile (and its blocking and mutex
// profiles, with BlockProfileEnv) and returns what ends them and writes
// them with the allocation profile.
func profile(prefix string) (func(), error) {
	cpu, err := os.Create(prefix + ".cpu")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return nil, err
	}
	if os.Getenv(BlockProfileEnv) == "1" {
		runtime.SetBlockProfileRate(10_000) // one blocking event per 10 µs blocked
		runtime.SetMutexProfileFraction(10)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = cpu.Close()
		for _, p := range []struct{ name, ext string }{{"allocs", "mem"}, {"block", "block"}, {"mutex", "mutex"}} {
			if f, err := os.Create(prefix + "." + p.ext); err == nil {
				_ = pprof.Lookup(p.name).WriteTo(f, 0)
				_ = f.Close()
			}
		}
	}, nil
}

// serveStats answers each "stats" line on stdin with the process's
// allocations and CPU time, until stdin closes.
func serveStats() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "stats" {
			fmt.Println("?")
			continue
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		r, w := Syscalls()
		fmt.Println(m.Mallocs, CPUTime().Nanoseconds(), r, w)
	}
}

// Syscalls are the read and write system calls the process has made
// (Linux; zero elsewhere).
func Syscalls() (reads, writes int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			reads, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			writes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return reads, writes
}

func runChild(role string) error {
	switch role {
	case "nats":
		if prof := os.Getenv(NATSProfileEnv); prof != "" {
			stop, err := profile(prof)
			if err != nil {
				return err
			}
			defer stop()
		}
		srv, err := natsembed.Start(natsembed.Options{})
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		fmt.Println(srv.URL())
		serveStats()
		return nil
	case "host":
		url := os.Args[len(os.Args)-1]
		if prof := os.Getenv(HostProfileEnv); prof != "" {
			stop, err := profile(prof)
			if err != nil {
				return err
			}
			defer stop()
		}
		pool, err := supervisor.NewPool(context.Background(), snodo.Command(os.Getenv(serverEnv), "-fast"), 1)
		if err != nil {
			return err
		}
		name := cmp.Or(os.Getenv(hostNameEnv), "fast")
		serve := []remote.HostOption{remote.Serve(name, pool)}
		if name == "fast" && os.Getenv(HostBEnv) == HostBSame {
			serve = append(serve, remote.Serve(RemoteB, pool)) // the same pool: closing it twice is a no-op
		}
		h, err := remote.NewHost(context.Background(), url, serve...)
		if err != nil {
			return err
		}
		defer func() { _ = h.Close(); <-h.Done() }()
		if name != "fast" { // a second host (HostBEnv): no responders
			fmt.Println("ready")
			serveStats()
			return nil
		}
		responder, err := nats.Connect(url)
		if err != nil {
			return err
		}
		defer responder.Close()
		if _, err := responder.QueueSubscribe("bare.call", "bare", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			return err
		}
		// BarePool's subscriber: the pool call on the delivery goroutine,
		// its result the answer, or its error in a header of its own. The
		// host's pool: a pair's two calls reach one MCP server, where two
		// servers' own difference moved a pair by ±30 µs from round to
		// round.
		if _, err := responder.QueueSubscribe(barePoolSubject, "bare", func(m *nats.Msg) {
			params := json.RawMessage(m.Data)
			res, err := pool.Request(context.Background(), "tools/call", &params)
			if err != nil {
				_ = m.RespondMsg(&nats.Msg{Header: nats.Header{barePoolErr: {err.Error()}}})
				return
			}
			_ = m.Respond(res)
		}); err != nil {
			return err
		}
		if err := responder.Flush(); err != nil {
			return err
		}
		fmt.Println("ready")
		serveStats()
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}
