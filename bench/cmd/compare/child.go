package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/snodo/snodo/bench/clients"
	"github.com/snodo/snodo/bench/server"
)

// job is one measurement of one client in one era, run in a child
// process of its own so that its peak RSS is the client's.
type job struct {
	Measure string        `json:"measure"`
	Client  string        `json:"client"`
	Era     string        `json:"era"`
	Server  string        `json:"server"`
	Dur     time.Duration `json:"dur"`   // per throughput phase
	Count   int           `json:"count"` // big calls, connect cycles, events, idle connections
	// Fast runs the server that is never the bottleneck (benchserver -fast).
	Fast bool `json:"fast,omitempty"`
	// NoMeta (with Fast) runs the fast server with no _meta in its
	// results (benchserver -fast -no-meta).
	NoMeta bool `json:"noMeta,omitempty"`
	// Raw calls through clients.Requester (params encoded beforehand, the
	// result left raw) instead of the typed Call.
	Raw bool `json:"raw,omitempty"`
	// HTTP connects over Streamable HTTP to the fast HTTP server
	// (benchserver -http), which the child starts.
	HTTP bool `json:"http,omitempty"`
	// Run is the run's index (mRemote rotates the order of its rows by it).
	Run int `json:"run,omitempty"`
	// Snodo is the snodo command (mGateway runs snodo serve).
	Snodo string `json:"snodo,omitempty"`
}

// Measurements, each a child process.
const (
	mCalls = "calls" // calls/s at 1 and 64 in flight, CPU per call, latency, allocs, peak RSS
	// mCallsFast is mCalls against the fast server; a job says so with
	// Fast (its Measure is mCalls).
	mCallsFast = "calls-fast"
	// mCallsNoMeta is mCallsFast, modern era, typed calls only, against the
	// fast server with no _meta in its results: the rows beside which
	// mCallsFast's show what a result's _meta.serverInfo costs. A job says
	// so with Fast and NoMeta (its Measure is mCalls).
	mCallsNoMeta = "calls-no-meta"
	mBig         = "big"     // 16 MiB responses: MB/s and RSS growth
	mConnect     = "connect" // connect + first call + close
	mIdle        = "idle"    // heap and goroutines of idle connections
	mAsk         = "ask"     // server-request round trips/s
	mSubs        = "subs"    // subscription events/s
	// mHTTP is mCalls over Streamable HTTP against the fast HTTP server;
	// mHTTPSubs is mSubs over it. Their jobs say so with HTTP.
	mHTTP     = "http"
	mHTTPSubs = "http-subs"
	// mRemote is remote calls over NATS against bare nats.go request/reply
	// and a local pool call (package remotebench), every row in one child.
	mRemote = "remote"
	// mGateway is go-sdk's client on the fast HTTP server directly and
	// through snodo serve in front of the fast server on stdio.
	mGateway = "gateway"
)

// httpServer is the child's fast HTTP server, started by connect for an
// HTTP job and stopped as the child ends.
var httpServer *server.HTTPProcess

var echoArgs = json.RawMessage(`{"text":"hello"}`)

func runChild(spec string) {
	var j job
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		fatal(err)
	}
	// BENCH_CPUPROFILE and BENCH_MEMPROFILE write pprof profiles of the
	// child, for looking into one client's costs; BENCH_CPUPROFILE64 and
	// BENCH_MUTEXPROFILE64 a CPU and a mutex (lock wait) profile of a
	// calls measurement's phase of 64 in flight alone.
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if os.Getenv("BENCH_MEMPROFILE") != "" {
		runtime.MemProfileRate = 512
		if j.Measure != mIdle { // measureIdle writes it while its connections are live
			defer writeMemProfile()
		}
	}
	var (
		res map[string]float64
		err error
	)
	switch j.Measure {
	case mCalls:
		res, err = measureCalls(j)
	case mBig:
		res, err = measureBig(j)
	case mConnect:
		res, err = measureConnect(j)
	case mIdle:
		res, err = measureIdle(j)
	case mAsk:
		res, err = measureAsk(j)
	case mSubs:
		res, err = measureSubs(j)
	case mRemote:
		res, err = measureRemote(j)
	case mGateway:
		res, err = measureGateway(j)
	default:
		err = fmt.Errorf("unknown measurement %q", j.Measure)
	}
	if httpServer != nil {
		httpServer.Close()
	}
	out := childResult{Metrics: res}
	if err != nil {
		out.Error = err.Error()
	}
	b, _ := json.Marshal(out)
	os.Stdout.Write(append(b, '\n'))
}

type childResult struct {
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Error   string             `json:"error,omitempty"`
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(1)
}

func connect(j job, onEvent func()) (clients.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var args []string
	if j.Fast {
		args = []string{"-fast"}
	}
	if j.NoMeta {
		args = append(args, "-no-meta")
	}
	o := clients.Options{Command: j.Server, Args: args, Era: j.Era, OnEvent: onEvent}
	if j.HTTP {
		if httpServer == nil {
			srv, err := server.StartHTTP(j.Server)
			if err != nil {
				return nil, err
			}
			httpServer = srv
		}
		o.URL = httpServer.URL
	}
	return clients.Connect(ctx, j.Client, o)
}

func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// echo makes one call. It passes no deadline so that the harness adds no
// allocations to the client's (the child as a whole has a watchdog).
func echo(c clients.Client) error {
	text, err := c.Call(context.Background(), "echo", echoArgs)
	if err == nil && text != "hello" {
		err = fmt.Errorf("echo answered %q", text)
	}
	return err
}

// latencies is a histogram with 1 µs buckets up to 50 ms, so recording
// allocates nothing.
type latencies struct {
	buckets [50000]uint32
	over    []time.Duration
	n       int
}

func (l *latencies) add(d time.Duration) {
	l.n++
	if us := int(d / time.Microsecond); us < len(l.buckets) {
		l.buckets[us]++
		return
	}
	l.over = append(l.over, d)
}

// quantile returns the q-quantile in microseconds (bucket upper bound).
func (l *latencies) quantile(q float64) float64 {
	rank := int(q * float64(l.n))
	seen := 0
	for us, c := range l.buckets {
		seen += int(c)
		if seen > rank {
			return float64(us) + 1
		}
	}
	slices.Sort(l.over)
	if i := rank - seen; i < len(l.over) {
		return float64(l.over[i]) / float64(time.Microsecond)
	}
	return 0
}

var (
	echoParams = json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	hello      = []byte(`"hello"`)
)

// serverCPU is the CPU time the child's HTTP server has used (0 when it
// has none).
func serverCPU() time.Duration {
	if httpServer == nil {
		return 0
	}
	return httpServer.CPU()
}

// switches is the process's voluntary and involuntary context switches
// so far (every thread): each voluntary one is a thread that slept.
func switches() [2]int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return [2]int64{}
	}
	return [2]int64{ru.Nvcsw, ru.Nivcsw}
}

// numGC is the number of garbage collections so far.
func numGC() uint32 {
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	return st.NumGC
}

// cpuTime is the user plus system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func measureCalls(j job) (map[string]float64, error) {
	c, err := connect(j, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	call := func() error { return echo(c) }
	if j.Raw {
		r, ok := c.(clients.Requester)
		if !ok {
			return nil, fmt.Errorf("n/a: %s has no raw request", j.Client)
		}
		call = func() error {
			res, err := r.Request(context.Background(), "tools/call", echoParams)
			if err == nil && !bytes.Contains(res, hello) {
				err = fmt.Errorf("echo answered %s", res)
			}
			return err
		}
	}
	// Warm up: buffers grown, code paths paged in.
	for end := time.Now().Add(j.Dur / 5); time.Now().Before(end); {
		if err := call(); err != nil {
			return nil, err
		}
	}
	lat := new(latencies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rates := make([]float64, 0, 4*phaseSlices) // allocated before the phase
	srv0 := serverCPU()
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(j.Dur)
	sliceStart, sliceCalls := start, 0
	calls := 0
	for {
		t0 := time.Now()
		if err := call(); err != nil {
			return nil, err
		}
		t1 := time.Now()
		lat.add(t1.Sub(t0))
		calls++
		if sliceCalls++; t1.Sub(sliceStart) >= j.Dur/phaseSlices && len(rates) < cap(rates) {
			rates = append(rates, float64(sliceCalls)/t1.Sub(sliceStart).Seconds())
			sliceStart, sliceCalls = t1, 0
		}
		if calls%64 == 0 && t1.After(deadline) {
			break
		}
	}
	cpu1 := cpuTime() - cpu0
	srv1 := serverCPU() - srv0
	runtime.ReadMemStats(&after)
	res := map[string]float64{
		"calls1":  medianOf(rates),
		"cpu1_us": float64(cpu1) / float64(time.Microsecond) / float64(calls),
		"p50_us":  lat.quantile(0.50),
		"p99_us":  lat.quantile(0.99),
		"bytes":   float64(after.TotalAlloc-before.TotalAlloc) / float64(calls),
		"allocs":  float64(after.Mallocs-before.Mallocs) / float64(calls),
		"samples": float64(calls),
	}
	if j.HTTP {
		res["srv_cpu1_us"] = float64(srv1) / float64(time.Microsecond) / float64(calls)
	}

	const inFlight = 64
	if path := os.Getenv("BENCH_CPUPROFILE64"); path != "" {
		stop, err := startProfile(path)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if path := os.Getenv("BENCH_MUTEXPROFILE64"); path != "" {
		runtime.SetMutexProfileFraction(1)
		defer writeProfile("mutex", path)
	}
	var total atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	srv0 = serverCPU()
	sw0 := switches()
	gc0 := numGC()
	cpu0 = cpuTime()
	start = time.Now()
	deadline = start.Add(j.Dur)
	for range inFlight {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := call(); err != nil {
					once.Do(func() { firstErr = err })
					break
				}
				total.Add(1)
			}
		})
	}
	rates = rates[:0]
	for last, lastN := start, int64(0); ; {
		time.Sleep(j.Dur / phaseSlices)
		now, n := time.Now(), total.Load()
		if now.After(deadline) {
			break
		}
		rates = append(rates, float64(n-lastN)/now.Sub(last).Seconds())
		last, lastN = now, n
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	res["calls64"] = medianOf(rates)
	res["cpu64_us"] = float64(cpuTime()-cpu0) / float64(time.Microsecond) / float64(total.Load())
	sw := switches()
	n := float64(total.Load())
	res["vcsw64"] = float64(sw[0]-sw0[0]) / n
	res["ivcsw64"] = float64(sw[1]-sw0[1]) / n
	res["gc64_per_kcall"] = float64(numGC()-gc0) * 1000 / n
	res["n64"] = n
	if j.HTTP {
		res["srv_cpu64_us"] = float64(serverCPU()-srv0) / float64(time.Microsecond) / float64(total.Load())
	}
	res["peak_rss_kib"] = procStatusKiB("VmHWM")
	return res, nil
}

// startProfile starts a CPU profile written to path and returns its
// stop: BENCH_CPUPROFILE64 profiles only a calls measurement's phase of
// 64 in flight, the one the HTTP goals are read from.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeProfile writes the named runtime profile to path (a failure is
// said on stderr: the measurement stands without it).
func writeProfile(name, path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup(name).WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", name, "profile:", err)
	}
}

// phaseSlices is how many parts a throughput phase is cut into: calls/s is the
// median of their rates, so a burst of load from other processes on a
// shared machine moves it less than it moves the mean.
const phaseSlices = 10

// medianOf is the median of vs (0 for none).
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if len(vs)%2 == 0 {
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return vs[len(vs)/2]
}

func measureBig(j job) (map[string]float64, error) {
	c, err := connect(j, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := echo(c); err != nil {
		return nil, err
	}
	runtime.GC()
	base := procStatusKiB("VmRSS")
	// Every call is timed, the first (which grows the buffers) included;
	// slow clients stop after a few seconds.
	var elapsed time.Duration
	calls := 0
	cpu0 := cpuTime()
	for calls < j.Count && (calls == 0 || elapsed < 3*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t0 := time.Now()
		text, err := c.Call(ctx, "big", nil)
		elapsed += time.Since(t0)
		cancel()
		if err != nil {
			return nil, err
		}
		if len(text) < server.BigLineBytes-256 {
			return nil, fmt.Errorf("big answered %d bytes of text", len(text))
		}
		calls++
	}
	cpu := cpuTime() - cpu0
	peak := procStatusKiB("VmHWM")
	return map[string]float64{
		"mbps":         float64(calls) * server.BigLineBytes / (1 << 20) / elapsed.Seconds(),
		"cpu_ms":       float64(cpu) / float64(time.Millisecond) / float64(calls),
		"calls":        float64(calls),
		"rss_growth":   (peak - base) / 1024, // MiB
		"peak_rss_mib": peak / 1024,
	}, nil
}

func measureConnect(j job) (map[string]float64, error) {
	ds := make([]float64, 0, j.Count)
	for range j.Count {
		t0 := time.Now()
		c, err := connect(j, nil)
		if err != nil {
			return nil, err
		}
		if err := echo(c); err != nil {
			c.Close()
			return nil, err
		}
		if err := c.Close(); err != nil && !isExitErr(err) {
			return nil, err
		}
		ds = append(ds, float64(time.Since(t0))/float64(time.Millisecond))
	}
	slices.Sort(ds)
	return map[string]float64{"connect_ms": ds[len(ds)/2]}, nil
}

// isExitErr: some clients report how the server exited from Close.
func isExitErr(err error) bool {
	return strings.Contains(err.Error(), "exit status") || strings.Contains(err.Error(), "signal:")
}

func measureIdle(j job) (map[string]float64, error) {
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	rss0 := procStatusKiB("VmRSS")
	conns := make([]clients.Client, 0, j.Count)
	defer func() { closeAll(conns) }()
	for range j.Count {
		c, err := connect(j, nil)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
		if err := echo(c); err != nil {
			return nil, err
		}
	}
	time.Sleep(200 * time.Millisecond) // let transient goroutines finish
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	writeMemProfile()
	n := float64(j.Count)
	return map[string]float64{
		"heap_kib":   (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / 1024 / n,
		"goroutines": float64(runtime.NumGoroutine()-g0) / n,
		"rss_kib":    (procStatusKiB("VmRSS") - rss0) / n,
		"conns":      n,
	}, nil
}

// writeMemProfile writes the allocs profile to $BENCH_MEMPROFILE, if set
// (its inuse_space sample is what is live as of the last GC).
func writeMemProfile() {
	path := os.Getenv("BENCH_MEMPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		fatal(err)
	}
	pprof.Lookup("allocs").WriteTo(f, 0)
	f.Close()
}

func closeAll(conns []clients.Client) {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for _, c := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			c.Close()
			<-sem
		})
	}
	wg.Wait()
}

func measureAsk(j job) (map[string]float64, error) {
	c, err := connect(j, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ask := func() error {
		ctx, cancel := callCtx()
		defer cancel()
		text, err := c.Call(ctx, "ask", nil)
		if err == nil && text != "hello" {
			err = fmt.Errorf("ask answered %q", text)
		}
		return err
	}
	for range 20 {
		if err := ask(); err != nil {
			return nil, err
		}
	}
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(j.Dur)
	n := 0
	for time.Now().Before(deadline) {
		if err := ask(); err != nil {
			return nil, err
		}
		n++
	}
	return map[string]float64{
		"asks":   float64(n) / time.Since(start).Seconds(),
		"cpu_us": float64(cpuTime()-cpu0) / float64(time.Microsecond) / float64(n),
	}, nil
}

func measureSubs(j job) (map[string]float64, error) {
	if j.Era != clients.Modern {
		return nil, errors.New("n/a: subscriptions/listen exists only in the modern era")
	}
	var got atomic.Int64
	var want atomic.Int64
	all := make(chan struct{}, 1)
	c, err := connect(j, func() {
		if got.Add(1) == want.Load() {
			all <- struct{}{}
		}
	})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	emit := func(n int) (time.Duration, error) {
		got.Store(0)
		want.Store(int64(n))
		ctx, cancel := callCtx()
		defer cancel()
		t0 := time.Now()
		text, err := c.Call(ctx, "emit", json.RawMessage(`{"count":`+strconv.Itoa(n)+`}`))
		if err != nil {
			return 0, err
		}
		if text != strconv.Itoa(n) {
			return 0, fmt.Errorf("emit sent %s events, want %d (one subscription)", text, n)
		}
		select {
		case <-all:
		case <-ctx.Done():
			return 0, fmt.Errorf("%d of %d events arrived", got.Load(), n)
		}
		return time.Since(t0), nil
	}
	if _, err := emit(100); err != nil {
		return nil, err
	}
	// Batches of 1,000 events until Count or twice the phase duration.
	const batch = 1000
	var elapsed time.Duration
	events := 0
	cpu0 := cpuTime()
	for events < j.Count && elapsed < 2*j.Dur {
		d, err := emit(batch)
		if err != nil {
			return nil, err
		}
		elapsed += d
		events += batch
	}
	return map[string]float64{
		"events": float64(events) / elapsed.Seconds(),
		"cpu_us": float64(cpuTime()-cpu0) / float64(time.Microsecond) / float64(events),
	}, nil
}

// procStatusKiB reads a kB field of /proc/self/status (0 elsewhere).
func procStatusKiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return v
		}
	}
	return 0
}
