// Command compare runs the client comparison: snodo, the official Go SDK,
// mcp-go and a minimal hand-written client (the ceiling) against the same
// near-zero-cost server, in both MCP eras, each measurement of each client
// in a child process of its own, several runs; it writes the medians with
// min–max and the ratios to the ceiling as markdown.
//
//	go run ./cmd/compare -out ../docs/performance.md [-runs 3] [-quick]
//
// The same clients over Streamable HTTP (the http and http-subs
// measurements) make a section of their own between markers; -only
// http,http-subs measures just those and rewrites only that section of
// -out (make bench-http).
//
// Every bench/notes/*.md file is copied verbatim, sorted by name, to the
// end of the report; -notes-only rewrites just that tail of -out.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo/bench/clients"
	"github.com/snodo/snodo/bench/internal/remotebench"
)

type settings struct {
	runs      int
	fastRuns  int // runs of the fast server's Request rows, whose 1-in-flight ratio is the noisiest figure
	dur       time.Duration
	bigCalls  int
	connects  int
	events    int
	idle      int
	idleRuns  int
	clients   []string
	eras      []string
	quick     bool
	serverBin string
	loadStart string
	notesDir  string
	only      []string // measurements to run; nil: all
	// remoteRuns and remoteCalls: runs of the remote measurement, and its
	// calls per row at 1 in flight (four times as many at 16).
	remoteRuns, remoteCalls int
	// gatewayRuns and gatewayCalls: runs of the gateway measurement and
	// its calls per way; snodoBin is the snodo command it runs.
	gatewayRuns, gatewayCalls int
	snodoBin                  string
}

func main() {
	remotebench.ChildMain() // the NATS server and host of a remote measurement's child
	child := flag.String("child", "", "internal: run one measurement (JSON job) and print its result")
	out := flag.String("out", "", "write the markdown report here (default: stdout)")
	runs := flag.Int("runs", 3, "runs of every measurement (medians and min–max over them)")
	fastRuns := flag.Int("fast-runs", 15, "runs of the Request rows against the fast server (at least -runs): one call at a time is a ping-pong between two processes, and its ratio needs more runs to settle")
	quick := flag.Bool("quick", false, "one short run: a smoke test, not numbers to publish")
	idle := flag.Int("idle", 1000, "idle connections held at once")
	notesDir := flag.String("notes", "notes", "directory whose *.md files end the report, verbatim and sorted")
	only := flag.String("only", "", "comma-separated measurements to run (calls, calls-fast, calls-no-meta, big, connect, ask, subs, idle, http, http-subs, remote, gateway); default all. Only http and http-subs: measure just those and rewrite only the Streamable HTTP section of -out (between its markers), keeping the rest; only remote, or only gateway: the same for that section")
	remoteRuns := flag.Int("remote-runs", 5, "runs of the remote measurement (every row of it in each run)")
	remoteCalls := flag.Int("remote-calls", 3000, "calls per row of the remote measurement at 1 in flight (four times as many at 16)")
	clientList := flag.String("clients", "", "comma-separated clients to run (the ceiling is always run); default all")
	notesOnly := flag.Bool("notes-only", false, "measure nothing: rewrite the bench/notes tail of -out")
	flag.Parse()
	if *child != "" {
		runChild(*child)
		return
	}
	if *notesOnly {
		if *out == "" {
			fatal(fmt.Errorf("-notes-only needs -out"))
		}
		old, err := os.ReadFile(*out)
		if err != nil {
			fatal(err)
		}
		if err := os.WriteFile(*out, refreshNotes(old, *notesDir), 0o644); err != nil {
			fatal(err)
		}
		return
	}
	s := settings{runs: *runs, fastRuns: max(*fastRuns, *runs), dur: time.Second, bigCalls: 8, connects: 15, events: 50000, idle: *idle, idleRuns: 1,
		clients: clients.Names(), eras: []string{clients.Modern, clients.Legacy}, quick: *quick, notesDir: *notesDir,
		remoteRuns: *remoteRuns, remoteCalls: *remoteCalls, gatewayRuns: *runs + 2, gatewayCalls: 3000}
	if *only != "" {
		s.only = strings.Split(*only, ",")
	}
	if *clientList != "" {
		s.clients = nil
		for _, c := range clients.Names() {
			if c == ceiling || slices.Contains(strings.Split(*clientList, ","), c) {
				s.clients = append(s.clients, c)
			}
		}
	}
	if s.quick {
		s.runs, s.fastRuns, s.dur, s.bigCalls, s.connects, s.events, s.idle = 1, 1, 250*time.Millisecond, 2, 3, 2000, min(*idle, 50)
		s.remoteRuns, s.remoteCalls = 1, 300
		s.gatewayRuns, s.gatewayCalls = 1, 300
	}
	if s.runs < 1 {
		fatal(fmt.Errorf("-runs must be at least 1"))
	}
	dir, err := os.MkdirTemp("", "snodo-bench")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	s.serverBin = filepath.Join(dir, "benchserver")
	build := exec.Command("go", "build", "-o", s.serverBin, "github.com/snodo/snodo/bench/cmd/benchserver")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fatal(fmt.Errorf("building the bench server: %w", err))
	}
	if s.only == nil || slices.Contains(s.only, mGateway) {
		// snodo's command, from the library's own module (one directory up).
		s.snodoBin = filepath.Join(dir, "snodo")
		build := exec.Command("go", "build", "-o", s.snodoBin, "./cmd/snodo")
		build.Dir = ".."
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fatal(fmt.Errorf("building snodo: %w", err))
		}
	}
	started := time.Now()
	s.loadStart = loadAvg()
	res := collect(s)
	var report []byte
	switch {
	case s.httpOnly() && *out != "":
		old, err := os.ReadFile(*out)
		if err != nil {
			fatal(err)
		}
		report = spliceHTTP(old, renderHTTP(s, res, time.Since(started)))
	case slices.Equal(s.only, []string{mGateway}) && *out != "":
		old, err := os.ReadFile(*out)
		if err != nil {
			fatal(err)
		}
		report = spliceSection(old, renderGateway(s, res), gatewayBegin, gatewayEnd, "## snodo against the targets\n", notesHeading)
	case s.remoteOnly() && *out != "":
		old, err := os.ReadFile(*out)
		if err != nil {
			fatal(err)
		}
		report = spliceSection(old, renderRemote(s, res), remoteBegin, remoteEnd, "## snodo against the targets\n", notesHeading)
	default:
		report = render(s, res, time.Since(started))
	}
	if s.only == nil || slices.Contains(s.only, mRemote) {
		for _, g := range remoteGoals(res) {
			fmt.Fprintln(os.Stderr, "compare: goal", g)
		}
	}
	if s.only == nil || slices.Contains(s.only, mGateway) {
		fmt.Fprintln(os.Stderr, "compare: goal", gatewayGoalLine(res))
	}
	if *out == "" {
		os.Stdout.Write(report)
		return
	}
	if err := os.WriteFile(*out, report, 0o644); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "compare: wrote %s in %s\n", *out, time.Since(started).Round(time.Second))
}

// key names one series: a measurement of one client in one era.
type key struct{ measure, client, era string }

// results holds, per series, each run's metrics (nil for a failed run)
// and the first error seen.
type results struct {
	runs map[key][]map[string]float64
	errs map[key]string
}

func collect(s settings) *results {
	r := &results{runs: map[key][]map[string]float64{}, errs: map[key]string{}}
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	measures := []string{mCalls, mCallsFast, mCallsNoMeta, mBig, mConnect, mAsk, mSubs, mIdle, mHTTP, mHTTPSubs, mRemote, mGateway}
	allRuns := max(s.runs, s.fastRuns, s.remoteRuns, s.gatewayRuns)
	switch {
	case s.remoteOnly():
		allRuns = s.remoteRuns
	case slices.Equal(s.only, []string{mGateway}):
		allRuns = s.gatewayRuns
	}
	for run := range allRuns {
		for _, m := range measures {
			if m == mGateway {
				if run < s.gatewayRuns && (s.only == nil || slices.Contains(s.only, m)) {
					fmt.Fprintf(os.Stderr, "run %d/%d: %-7s\n", run+1, allRuns, m)
					t0 := time.Now()
					metrics, err := runJob(self, job{Measure: mGateway, Server: s.serverBin, Snodo: s.snodoBin, Count: s.gatewayCalls, Run: run})
					fmt.Fprintf(os.Stderr, "  %s\n", time.Since(t0).Round(time.Millisecond))
					if err != nil {
						if _, seen := r.errs[gatewayKey]; !seen {
							r.errs[gatewayKey] = err.Error()
						}
						fmt.Fprintf(os.Stderr, "  %v\n", err)
					}
					r.runs[gatewayKey] = append(r.runs[gatewayKey], metrics)
				}
				continue
			}
			if m == mRemote {
				if run < s.remoteRuns && (s.only == nil || slices.Contains(s.only, m)) {
					fmt.Fprintf(os.Stderr, "run %d/%d: %-7s\n", run+1, allRuns, m)
					t0 := time.Now()
					metrics, err := runJob(self, job{Measure: mRemote, Server: s.serverBin, Count: s.remoteCalls, Run: run})
					fmt.Fprintf(os.Stderr, "  %s\n", time.Since(t0).Round(time.Millisecond))
					if err != nil {
						if _, seen := r.errs[remoteKey]; !seen {
							r.errs[remoteKey] = err.Error()
						}
						fmt.Fprintf(os.Stderr, "  %v\n", err)
					}
					r.runs[remoteKey] = append(r.runs[remoteKey], metrics)
				}
				continue
			}
			if (m == mIdle && run >= s.idleRuns) || (s.only != nil && !slices.Contains(s.only, m)) {
				continue
			}
			if (m == mCallsFast && run >= s.fastRuns) || (m != mCallsFast && run >= s.runs) {
				continue
			}
			for _, era := range s.eras {
				if m == mHTTPSubs && era != clients.Modern {
					continue // subscriptions/listen is modern only
				}
				if m == mCallsNoMeta && era != clients.Modern {
					continue // legacy results carry no _meta from either fast server
				}
				// Rotate the order of the clients from run to run so that
				// drift on the machine does not favour one of them.
				order := slices.Clone(s.clients)
				if m == mCalls || m == mCallsFast || m == mHTTP {
					order = callRows(s.clients)
				}
				k := run % len(order)
				order = append(order[k:], order[:k]...)
				for _, c := range order {
					if run >= s.runs && !strings.HasSuffix(c, rawSuffix) {
						continue // the extra fast runs are for the Request rows' ratios
					}
					j := job{Measure: m, Client: c, Era: era, Server: s.serverBin, Dur: s.dur}
					switch m {
					case mCallsFast:
						j.Measure, j.Fast = mCalls, true
					case mCallsNoMeta:
						j.Measure, j.Fast, j.NoMeta = mCalls, true, true
					case mHTTP:
						j.Measure, j.HTTP = mCalls, true
					case mHTTPSubs:
						j.Measure, j.HTTP = mSubs, true
					}
					if name, ok := strings.CutSuffix(c, rawSuffix); ok {
						j.Client, j.Raw = name, true
					}
					switch m {
					case mBig:
						j.Count = s.bigCalls
					case mConnect:
						j.Count = s.connects
					case mSubs, mHTTPSubs:
						j.Count = s.events
					case mIdle:
						j.Count = s.idle
					}
					fmt.Fprintf(os.Stderr, "run %d/%d: %-7s %-6s %s\n", run+1, allRuns, m, era, c)
					t0 := time.Now()
					metrics, err := runJob(self, j)
					fmt.Fprintf(os.Stderr, "  %s\n", time.Since(t0).Round(time.Millisecond))
					kk := key{m, c, era}
					if err != nil {
						if _, seen := r.errs[kk]; !seen {
							r.errs[kk] = err.Error()
						}
						fmt.Fprintf(os.Stderr, "  %v\n", err)
					}
					r.runs[kk] = append(r.runs[kk], metrics)
				}
			}
		}
	}
	return r
}

// rawSuffix marks the rows of the calls tables that call through
// clients.Requester: snodo's Client.Request and the minimal client's raw
// request, params encoded beforehand, the result left raw.
const rawSuffix = " Request"

// rawClients have a raw request (clients.Requester).
var rawClients = []string{"snodo", ceiling}

// callRows are the rows of a calls table: every client's typed call, then
// the raw requests, each ceiling last in its group.
func callRows(names []string) []string {
	rows := slices.Clone(names)
	for _, c := range rawClients {
		if slices.Contains(names, c) {
			rows = append(rows, c+rawSuffix)
		}
	}
	return rows
}

// ceilingOf is the row a row's ratios are to.
func ceilingOf(row string) string {
	if strings.HasSuffix(row, rawSuffix) {
		return ceiling + rawSuffix
	}
	return ceiling
}

func runJob(self string, j job) (map[string]float64, error) {
	spec, _ := json.Marshal(j)
	cmd := exec.Command(self, "-child", string(spec))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("child failed: %v: %s", err, lastLine(stderr.Bytes()))
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done
		return nil, fmt.Errorf("child timed out")
	}
	var res childResult
	if err := json.Unmarshal(lastLineBytes(stdout.Bytes()), &res); err != nil {
		return nil, fmt.Errorf("child output: %v: %q", err, lastLine(stdout.Bytes()))
	}
	if res.Error != "" {
		return nil, fmt.Errorf("%s", res.Error)
	}
	return res.Metrics, nil
}

func lastLineBytes(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func lastLine(b []byte) string { return string(lastLineBytes(b)) }
