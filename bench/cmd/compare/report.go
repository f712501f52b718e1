package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo/bench/clients"
)

const ceiling = "minimal"

// stat is the median and range of one metric over the runs.
type stat struct {
	med, lo, hi float64
	n           int
}

func summarize(vs []float64) (stat, bool) {
	if len(vs) == 0 {
		return stat{}, false
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return stat{med: med, lo: vs[0], hi: vs[len(vs)-1], n: len(vs)}, true
}

// values is one metric of a series over the successful runs.
func (r *results) values(k key, metric string) []float64 {
	var vs []float64
	for _, m := range r.runs[k] {
		if v, ok := m[metric]; ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// ratios is the metric of k divided by the ceiling's, run by run.
func (r *results) ratios(k key, metric string) []float64 {
	return r.paired(k, key{k.measure, ceilingOf(k.client), k.era}, metric, func(a, b float64) (float64, bool) { return a / b, b != 0 })
}

// paired is f of the metric of a and of b, run by run (the runs where
// both have it and f says ok).
func (r *results) paired(a, b key, metric string, f func(a, b float64) (float64, bool)) []float64 {
	mine, theirs := r.runs[a], r.runs[b]
	var vs []float64
	for i := range min(len(mine), len(theirs)) {
		x, ok1 := mine[i][metric]
		y, ok2 := theirs[i][metric]
		if ok1 && ok2 {
			if v, ok := f(x, y); ok {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// renderMetaCost is the table of typed calls, modern era, against the fast
// server with and without _meta.serverInfo in its results, measured in the
// same runs, and what _meta costs run by run. Nothing when the run
// measured neither.
func renderMetaCost(s settings, r *results, notes *footnotes) []byte {
	if s.only != nil && !slices.Contains(s.only, mCallsNoMeta) && !slices.Contains(s.only, mCallsFast) {
		return nil
	}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	era := clients.Modern
	p("## What `_meta.serverInfo` in results costs: typed calls, %s era, the fast server\n\n", eraTitle(era))
	p("| client | results | calls/s, 1 in flight | calls/s, 64 in flight | CPU µs/call, 1 in flight | CPU µs/call, 64 in flight | client B/call | allocs/call |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	metrics := []string{"calls1", "calls64", "cpu1_us", "cpu64_us", "bytes", "allocs"}
	signed := func(v float64) string { // +0.25, -0.25; +0.00 for what rounds to zero
		s := human(v)
		if t := strings.TrimPrefix(s, "-"); t == s || strings.Trim(t, "0.") == "" {
			return "+" + t
		}
		return s
	}
	for _, c := range s.clients {
		with, without := key{mCallsFast, c, era}, key{mCallsNoMeta, c, era}
		rows := [][]string{{c, "with `_meta` (spec-shaped)"}, {c, "without `_meta`"}, {c, "`_meta` costs"}}
		for _, m := range metrics {
			rows[0] = append(rows[0], r.cell(with, m, human, notes))
			rows[1] = append(rows[1], r.cell(without, m, human, notes))
			cost, show := func(a, b float64) (float64, bool) { return a - b, true }, signed
			if m == "calls1" || m == "calls64" {
				cost, show = func(a, b float64) (float64, bool) { return a / b, b != 0 }, ratioFmt
			}
			if st, ok := summarize(r.paired(with, without, m, cost)); ok {
				rows[2] = append(rows[2], st.format(show))
				continue
			}
			why := r.errs[without]
			if why == "" {
				why = r.errs[with]
			}
			rows[2] = append(rows[2], notes.na(why))
		}
		for _, row := range rows {
			p("| %s |\n", strings.Join(row, " | "))
		}
	}
	p("\nThe same typed calls as in the fast server's %s table, against the fast server as spec-following modern servers answer (`_meta` with `io.modelcontextprotocol/serverInfo` in every result) and configured not to identify itself (`benchserver -fast -no-meta`: no `_meta`, what the benchmarks measured before issue 30), one after the other in each run. The `_meta` costs row is, run by run, the ratio with/without for calls/s and the difference with − without for the rest, then the median (min–max) of those.\n\n", eraTitle(era))
	return b.Bytes()
}

func human(v float64) string {
	switch a := max(v, -v); {
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratioFmt(v float64) string { return fmt.Sprintf("%.2f×", v) }

func (s stat) format(f func(float64) string) string {
	if s.n <= 1 || f(s.lo) == f(s.hi) {
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.lo), f(s.hi))
}

// cell formats a metric of a series, or n/a with a footnote.
func (r *results) cell(k key, metric string, f func(float64) string, notes *footnotes) string {
	if st, ok := summarize(r.values(k, metric)); ok {
		return st.format(f)
	}
	return notes.na(r.errs[k])
}

func (r *results) ratioCell(k key, metric string, notes *footnotes) string {
	if st, ok := summarize(r.ratios(k, metric)); ok {
		return st.format(ratioFmt)
	}
	return notes.na(r.errs[k])
}

// footnotes collects why cells are n/a.
type footnotes struct{ texts []string }

// write lists the footnotes, numbered, then a blank line; nothing when
// there are none.
func (n *footnotes) write(b *bytes.Buffer) {
	if len(n.texts) == 0 {
		return
	}
	for i, t := range n.texts {
		fmt.Fprintf(b, "%d. %s\n", i+1, strings.ReplaceAll(t, "|", "\\|"))
	}
	b.WriteString("\n")
}

func (n *footnotes) na(why string) string {
	if why == "" {
		return "n/a"
	}
	why = strings.TrimPrefix(why, "n/a: ")
	if len(why) > 300 {
		why = why[:300] + "…"
	}
	i := slices.Index(n.texts, why)
	if i < 0 {
		n.texts = append(n.texts, why)
		i = len(n.texts) - 1
	}
	return fmt.Sprintf("n/a [%d]", i+1)
}

func render(s settings, r *results, took time.Duration) []byte {
	var b bytes.Buffer
	notes := &footnotes{}
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Performance: snodo against the official Go SDK and mcp-go\n\n")
	p("Generated by `make bench-compare` (`cd bench && go run ./cmd/compare -out ../docs/performance.md`); do not edit by hand.\n\n")
	if s.quick {
		p("**Quick smoke run (`-quick`): one short run; not figures to publish.**\n\n")
	}
	p("- Date: %s; %d run(s) of every measurement (the fast server's `Request` rows: %d run(s); idle connections: %d run(s)); the whole comparison took %s.\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), s.runs, s.fastRuns, min(s.idleRuns, s.runs), took.Round(time.Second))
	p("- Machine: %s, %d CPUs (nproc), %s, %s/%s, Linux %s.\n", cpuModel(), runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, osRelease())
	p("- Go: %s. Load average (1/5/15 min) when the comparison started: %s; when it ended: %s.\n", runtime.Version(), s.loadStart, loadAvg())
	p("- Clients: snodo %s; %s.\n", snodoVersion(), depVersions())
	p("- Servers: `bench/cmd/benchserver`. The realistic one, used everywhere: a near-zero-cost stdio MCP server (one goroutine, encoding/json on small structs, batched writes, 1 MiB stdout pipe). The fast one (`-fast`, calls only): canned answers with the id spliced in, nothing decoded beyond the id and the method, one write for everything one read brought — never the bottleneck, so the calls measure the client alone. Both answer modern results as spec-following servers do, with `io.modelcontextprotocol/serverInfo` in `_meta`; the fast one with `-no-meta` leaves it out, for the table of what it costs.\n")
	p("- Cells: median over the runs, (min–max) when they differ. Ratios (×) are to the ceiling — the minimal hand-written client — in the same run, then the median of those ratios.\n")
	p("- CPU µs/call is the user+system CPU time of the client process (`getrusage`; the server is another process) over the phase, divided by its calls: the figure that holds whatever the speed of the server or the load on the machine.\n\n")

	for _, server := range []string{mCallsFast, mCalls} {
		for _, era := range s.eras {
			title := "the realistic server"
			if server == mCallsFast {
				title = "the fast server"
			}
			p("## Calls: the `echo` tool, %s era, %s\n\n", eraTitle(era), title)
			p("| client | calls/s, 1 in flight | × ceiling | calls/s, 64 in flight | × ceiling | CPU µs/call, 1 in flight | CPU µs/call, 64 in flight | × ceiling | p50 µs | p99 µs | client B/call | allocs/call | peak RSS MiB |\n")
			p("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
			for _, c := range callRows(s.clients) {
				k := key{server, c, era}
				p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", rowName(c),
					r.cell(k, "calls1", human, notes), r.ratioCell(k, "calls1", notes),
					r.cell(k, "calls64", human, notes), r.ratioCell(k, "calls64", notes),
					r.cell(k, "cpu1_us", human, notes), r.cell(k, "cpu64_us", human, notes), r.ratioCell(k, "cpu64_us", notes),
					r.cell(k, "p50_us", human, notes), r.cell(k, "p99_us", human, notes),
					r.cell(k, "bytes", human, notes), r.cell(k, "allocs", human, notes),
					r.cell(k, "peak_rss_kib", func(v float64) string { return human(v / 1024) }, notes))
			}
			p("\n")
		}
	}
	p("The first rows call the `echo` tool through each client's typed API (snodo: `CallTool`; the minimal client decodes the result with encoding/json). The `Request` rows are the transports alone: snodo's `Client.Request` and the minimal client's raw request, with params encoded beforehand (`{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}`, the era's `_meta` added by the client) and the result left raw; their ratios are to `minimal Request`.\n\n")
	p("Calls/s is the median rate of the ten slices of each phase, which a burst of load from other processes moves less than the mean. Latency is measured with 1 in flight (%s per phase per run). Bytes and allocations per call are everything the client process allocated during the 1-in-flight phase divided by the calls (`runtime.MemStats`), so reader and writer goroutines count. Peak RSS is the child's `VmHWM`.\n\n", s.dur)

	b.Write(renderMetaCost(s, r, notes))

	b.Write(renderHTTP(s, r, took))
	p("\n")
	b.Write(renderRemote(s, r))
	p("\n")
	b.Write(renderGateway(s, r))
	p("\n")

	p("## A 16 MiB response (the `big` tool: one 16 MiB line)\n\n")
	p("| client | era | MB/s | × ceiling | CPU ms/call | client RSS growth MiB | × line | peak RSS MiB |\n|---|---|---|---|---|---|---|---|\n")
	for _, era := range s.eras {
		for _, c := range s.clients {
			k := key{mBig, c, era}
			p("| %s | %s | %s | %s | %s | %s | %s | %s |\n", c, era,
				r.cell(k, "mbps", human, notes), r.ratioCell(k, "mbps", notes), r.cell(k, "cpu_ms", human, notes),
				r.cell(k, "rss_growth", human, notes),
				r.cell(k, "rss_growth", func(v float64) string { return fmt.Sprintf("%.1f×", v/16) }, notes),
				r.cell(k, "peak_rss_mib", human, notes))
		}
	}
	p("\nUp to %d calls per run (a client stops after 3 s), all timed, the first included; MB/s counts MiB of response line per second, the text decoded into a Go string. RSS growth is `VmHWM` after the calls minus `VmRSS` before the first one.\n\n", s.bigCalls)

	p("## Connect + first call + close\n\n| client | modern ms | legacy ms |\n|---|---|---|\n")
	for _, c := range s.clients {
		row := []string{c}
		for _, era := range []string{clients.Modern, clients.Legacy} {
			row = append(row, r.cell(key{mConnect, c, era}, "connect_ms", human, notes))
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\nMedian of %d cycles per run: start the server, the era's handshake, one `echo` call, and the client's own Close (the SDK's waits for the server to exit; snodo's returns once stdin is closed).\n\n", s.connects)

	p("## %d idle connections in one process\n\n", s.idle)
	p("| client | era | heap KiB/conn | goroutines/conn | RSS KiB/conn |\n|---|---|---|---|---|\n")
	for _, era := range s.eras {
		for _, c := range s.clients {
			k := key{mIdle, c, era}
			p("| %s | %s | %s | %s | %s |\n", c, era, r.cell(k, "heap_kib", human, notes),
				r.cell(k, "goroutines", human, notes), r.cell(k, "rss_kib", human, notes))
		}
	}
	p("\nEach connection made one `echo` call, then sat idle; heap after two GCs, goroutines and RSS, minus what the process had before, divided by the connections (snodo: all on one actor system).\n\n")

	p("## Server-request round trips\n\n| client | modern /s (input_required + retry) | × ceiling | CPU µs/call | legacy /s (elicitation/create) | × ceiling | CPU µs/call |\n|---|---|---|---|---|---|---|\n")
	for _, c := range s.clients {
		row := []string{c}
		for _, era := range []string{clients.Modern, clients.Legacy} {
			k := key{mAsk, c, era}
			row = append(row, r.cell(k, "asks", human, notes), r.ratioCell(k, "asks", notes), r.cell(k, "cpu_us", human, notes))
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\nCalls of the `ask` tool, 1 in flight: legacy, the server sends `elicitation/create` and answers the call once the client replied; modern, the server answers `input_required` and the client retries with `inputResponses`.\n\n")

	p("## Subscription events\n\n| client | modern events/s | × ceiling | CPU µs/event | legacy |\n|---|---|---|---|---|\n")
	for _, c := range s.clients {
		k := key{mSubs, c, clients.Modern}
		p("| %s | %s | %s | %s | %s |\n", c, r.cell(k, "events", human, notes), r.ratioCell(k, "events", notes),
			r.cell(k, "cpu_us", human, notes), r.cell(key{mSubs, c, clients.Legacy}, "events", human, notes))
	}
	p("\nOne `subscriptions/listen` stream for tools list changes; the `emit` tool writes batches of 1,000 `notifications/tools/list_changed` on it (up to %d events, or %s); each batch timed from the call until the last event reached the client's callback, channel or handler.\n\n", s.events, 2*s.dur)

	p("## snodo against the targets\n\n")
	p("| target | modern | legacy |\n|---|---|---|\n")
	for _, t := range targets() {
		row := []string{t.name}
		for _, era := range []string{clients.Modern, clients.Legacy} {
			row = append(row, t.check(r, era))
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\nIssue 17's targets are measured against the fast server, the transport through the `Request` rows; issue 7's against the realistic server, through `CallTool`. A lower-is-better ratio (CPU) is met at or under its bound.\n\n")
	if len(notes.texts) > 0 {
		p("## Notes\n\n")
		notes.write(&b)
	}
	b.Write(notesSection(s.notesDir))
	return b.Bytes()
}

// notesHeading starts the tail of the report that holds bench/notes.
const notesHeading = "## Notes from bench/notes\n"

// notesSection is every *.md file of dir, verbatim, sorted by name, under
// notesHeading: figures measured elsewhere (other benchmarks, other
// helpers' measurements) that belong beside the comparison. Nothing when
// dir holds none.
func notesSection(dir string) []byte {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	slices.Sort(paths)
	var b bytes.Buffer
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			fatal(fmt.Errorf("reading %s: %w", path, err))
		}
		if b.Len() == 0 {
			b.WriteString(notesHeading + "\n")
		}
		fmt.Fprintf(&b, "<!-- bench/notes/%s -->\n\n", filepath.Base(path))
		b.Write(text)
		if !bytes.HasSuffix(text, []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// refreshNotes rewrites the bench/notes tail of an existing report
// without measuring anything again.
func refreshNotes(report []byte, dir string) []byte {
	if i := bytes.Index(report, []byte("\n"+notesHeading)); i >= 0 {
		report = report[:i+1]
	}
	return append(report, notesSection(dir)...)
}

type target struct {
	name  string
	check func(r *results, era string) string
}

func verdict(ok bool, detail string) string {
	if ok {
		return "met: " + detail
	}
	return "**missed**: " + detail
}

func targets() []target {
	ratioOf := func(measure, client, metric string, want float64) func(*results, string) string {
		return func(r *results, era string) string {
			st, ok := summarize(r.ratios(key{measure, client, era}, metric))
			if !ok {
				return "n/a"
			}
			return verdict(st.med >= want, st.format(ratioFmt))
		}
	}
	ratio := func(measure, metric string, want float64) func(*results, string) string {
		return ratioOf(measure, "snodo", metric, want)
	}
	atMostOf := func(measure, client, metric string, want float64, f func(float64) string) func(*results, string) string {
		return func(r *results, era string) string {
			st, ok := summarize(r.values(key{measure, client, era}, metric))
			if !ok {
				return "n/a"
			}
			// Compared as shown: process-wide counts carry a little
			// background (GC, timers), so 2.004 allocations shows, and
			// counts, as 2.00.
			v := verdict(f(st.med) == f(want) || st.med <= want, st.format(f))
			if c, ok := summarize(r.values(key{measure, ceilingOf(client), era}, metric)); ok {
				v += " (ceiling " + f(c.med) + ")"
			}
			return v
		}
	}
	atMost := func(measure, metric string, want float64, f func(float64) string) func(*results, string) string {
		return atMostOf(measure, "snodo", metric, want, f)
	}
	both := func(a, b func(*results, string) string) func(*results, string) string {
		return func(r *results, era string) string { return a(r, era) + "; " + b(r, era) }
	}
	ratioAtMost := func(measure, client, metric string, want float64) func(*results, string) string {
		return func(r *results, era string) string {
			st, ok := summarize(r.ratios(key{measure, client, era}, metric))
			if !ok {
				return "n/a"
			}
			return verdict(st.med <= want, st.format(ratioFmt))
		}
	}
	raw := "snodo" + rawSuffix
	return []target{
		{"17: `Request` calls/s ≥ 0.9× the ceiling, 1 in flight (fast server)", ratioOf(mCallsFast, raw, "calls1", 0.9)},
		{"17: `Request` calls/s ≥ 0.8× the ceiling, 64 in flight (fast server)", ratioOf(mCallsFast, raw, "calls64", 0.8)},
		{"17: `Request` client CPU per call ≤ 1.25× the ceiling's, 64 in flight (fast server)", ratioAtMost(mCallsFast, raw, "cpu64_us", 1.25)},
		{"17: raw `Request` ≤ 2 allocations per call", atMostOf(mCallsFast, raw, "allocs", 2, human)},
		{"30: typed `CallTool` ≤ 4 allocations per call (modern results carry _meta.serverInfo)", atMostOf(mCallsFast, "snodo", "allocs", 4, human)},
		{"7, 17: 16 MiB response: client RSS growth ≤ 3× the line (48 MiB)", atMost(mBig, "rss_growth", 48, func(v float64) string { return human(v) + " MiB" })},
		{"7: `CallTool` calls/s ≥ 0.8× the ceiling, 1 in flight", ratio(mCalls, "calls1", 0.8)},
		{"7: `CallTool` calls/s ≥ 0.6× the ceiling, 64 in flight", ratio(mCalls, "calls64", 0.6)},
		{"7: ≤ 1 KiB per call on the client", atMost(mCalls, "bytes", 1024, func(v float64) string { return human(v) + " B" })},
		{"7: 16 MiB response ≥ 0.8× the ceiling's MB/s", ratio(mBig, "mbps", 0.8)},
		{"30: idle connection ≤ 2 goroutines, ≤ 8 KiB heap", both(
			atMost(mIdle, "goroutines", 2, func(v float64) string { return human(v) + " goroutines" }),
			atMost(mIdle, "heap_kib", 8, func(v float64) string { return human(v) + " KiB" }))},
	}
}

// rowName is how a calls table names a row.
func rowName(row string) string {
	if name, ok := strings.CutSuffix(row, rawSuffix); ok {
		return name + " `Request`"
	}
	return row
}

func eraTitle(era string) string {
	if era == clients.Modern {
		return "modern (" + clients.ModernVersion + ")"
	}
	return "legacy (" + clients.LegacyVersion + ")"
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
			return fmt.Sprintf("%.0f GiB RAM", kb/(1<<20))
		}
	}
	return "unknown RAM"
}

func osRelease() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

func snodoVersion() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(working tree)"
	}
	v := "commit " + strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		v += " with uncommitted changes"
	}
	return v
}

func depVersions() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "versions unknown"
	}
	want := map[string]string{
		"github.com/modelcontextprotocol/go-sdk": "go-sdk",
		"github.com/mark3labs/mcp-go":            "mcp-go",
		"github.com/asynkron/protoactor-go":      "protoactor-go",
	}
	var parts []string
	for _, d := range info.Deps {
		if name, ok := want[d.Path]; ok {
			parts = append(parts, name+" "+d.Version)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
