package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo/bench/clients"
)

// The Streamable HTTP section of the report lies between these markers,
// so that -only http,http-subs can measure it again alone.
const (
	httpBegin = "<!-- http:begin (make bench-compare writes this section; make bench-http rewrites it alone) -->\n"
	httpEnd   = "<!-- http:end -->\n"
)

// httpPeer is the client issue 30's HTTP goals are measured against.
const httpPeer = "go-sdk"

// httpOnly reports whether the run measures the HTTP section alone.
func (s settings) httpOnly() bool {
	if len(s.only) == 0 {
		return false
	}
	for _, m := range s.only {
		if m != mHTTP && m != mHTTPSubs {
			return false
		}
	}
	return true
}

// remoteOnly reports whether the run measures the remote calls section
// alone.
func (s settings) remoteOnly() bool { return slices.Equal(s.only, []string{mRemote}) }

// spliceHTTP puts section in place of report's HTTP section, or, when it
// has none yet, before its targets table (else before its notes, else at
// its end).
func spliceHTTP(report, section []byte) []byte {
	if i := bytes.Index(report, []byte(httpBegin)); i >= 0 {
		if j := bytes.Index(report[i:], []byte(httpEnd)); j >= 0 {
			return slices.Concat(report[:i], section, report[i+j+len(httpEnd):])
		}
	}
	for _, at := range []string{"## snodo against the targets\n", notesHeading} {
		if i := bytes.Index(report, []byte(at)); i >= 0 {
			return slices.Concat(report[:i], section, []byte("\n"), report[i:])
		}
	}
	return append(report, section...)
}

// ratiosVs is the metric of k divided by other's, run by run.
func (r *results) ratiosVs(k key, other, metric string) []float64 {
	mine, theirs := r.runs[k], r.runs[key{k.measure, other, k.era}]
	var vs []float64
	for i := range min(len(mine), len(theirs)) {
		a, ok1 := mine[i][metric]
		b, ok2 := theirs[i][metric]
		if ok1 && ok2 && b != 0 {
			vs = append(vs, a/b)
		}
	}
	return vs
}

func (r *results) ratioVsCell(k key, other, metric string, notes *footnotes) string {
	if st, ok := summarize(r.ratiosVs(k, other, metric)); ok {
		return st.format(ratioFmt)
	}
	return notes.na(r.errs[k])
}

// renderHTTP is the Streamable HTTP section, markers included.
func renderHTTP(s settings, r *results, took time.Duration) []byte {
	var b bytes.Buffer
	notes := &footnotes{}
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("%s", httpBegin)
	p("## Calls over Streamable HTTP\n\n")
	p("Measured %s with snodo %s, %d run(s), %s; load average %s at the end. Server: `benchserver -http` (`bench/server/httpfast.go`), a hand-written HTTP/1.1 server in a process of its own (one goroutine per connection, keep-alive, canned answers with the id spliced in, nothing decoded beyond the id and the method; modern results carry `_meta` with `io.modelcontextprotocol/serverInfo`; legacy: `initialize` opens an `Mcp-Session-Id` session, the GET stream is refused with 405). Its CPU per call is the server column: never the bottleneck, it costs a fraction of the cheapest client. Clients: `snodo.ConnectHTTP` with its defaults; go-sdk's `StreamableClientTransport` and mcp-go's `NewStreamableHTTP`, each given an `http.Client` whose transport keeps 64 idle connections per host (the default 2 would make them dial anew for most calls at 64 in flight); the minimal client (the ceiling) is net/http with the same transport, one POST per call, the answer's members found without decoding, typed rows decoding the result with encoding/json.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), snodoVersion(), s.runs, took.Round(time.Second), loadAvg())
	for _, era := range s.eras {
		p("### %s era\n\n", strings.ToUpper(eraTitle(era)[:1])+eraTitle(era)[1:])
		p("| client | calls/s, 1 in flight | × %[1]s | calls/s, 64 in flight | × %[1]s | × ceiling | CPU µs/call, 1 in flight | CPU µs/call, 64 in flight | × %[1]s | server CPU µs/call, 64 in flight | p50 µs | p99 µs | client B/call | allocs/call |\n", httpPeer)
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range callRows(s.clients) {
			k := key{mHTTP, c, era}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", rowName(c),
				r.cell(k, "calls1", human, notes), r.ratioVsCell(k, httpPeer, "calls1", notes),
				r.cell(k, "calls64", human, notes), r.ratioVsCell(k, httpPeer, "calls64", notes), r.ratioCell(k, "calls64", notes),
				r.cell(k, "cpu1_us", human, notes), r.cell(k, "cpu64_us", human, notes), r.ratioVsCell(k, httpPeer, "cpu64_us", notes),
				r.cell(k, "srv_cpu64_us", human, notes),
				r.cell(k, "p50_us", human, notes), r.cell(k, "p99_us", human, notes),
				r.cell(k, "bytes", human, notes), r.cell(k, "allocs", human, notes))
		}
		p("\n")
	}
	p("Typed rows call the `echo` tool through each client's API (snodo: `CallTool`); the `Request` rows are snodo's `Client.Request` and the minimal client's raw request with params encoded beforehand, their × ceiling to `minimal Request`. × %s is to %s's typed row in the same run. Calls/s, CPU, latency, bytes and allocations are measured as in the stdio tables (client process only; bytes and allocations over the 1-in-flight phase, every goroutine of the client counted).\n\n", httpPeer, httpPeer)

	p("### Listen stream events (modern era)\n\n| client | events/s | × %s | CPU µs/event |\n|---|---|---|---|\n", httpPeer)
	for _, c := range s.clients {
		if c == ceiling {
			continue // the minimal HTTP client opens no listen stream
		}
		k := key{mHTTPSubs, c, clients.Modern}
		p("| %s | %s | %s | %s |\n", c, r.cell(k, "events", human, notes), r.ratioVsCell(k, httpPeer, "events", notes), r.cell(k, "cpu_us", human, notes))
	}
	p("\nOne `subscriptions/listen` POST whose SSE stream stays open; the `emit` tool writes batches of 1,000 `notifications/tools/list_changed` on it as one chunk (up to %d events, or %s); each batch timed from the call until the last event reached the client's callback, channel or handler.\n\n", s.events, 2*s.dur)

	p("### snodo against the HTTP goals\n\n| goal | modern | legacy |\n|---|---|---|\n")
	for _, g := range httpGoals() {
		row := []string{g.name}
		for _, era := range []string{clients.Modern, clients.Legacy} {
			row = append(row, g.check(r, era))
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\n")
	notes.write(&b)
	p("%s", httpEnd)
	return b.Bytes()
}

func httpGoals() []target {
	vsPeer := func(metric string, want float64, atMost bool) func(*results, string) string {
		return func(r *results, era string) string {
			st, ok := summarize(r.ratiosVs(key{mHTTP, "snodo", era}, httpPeer, metric))
			if !ok {
				return "n/a"
			}
			met := st.med >= want
			if atMost {
				met = st.med <= want
			}
			return verdict(met, st.format(ratioFmt)+" "+httpPeer+"'s")
		}
	}
	// ahead: snodo's typed row against the better of the peers on each
	// column, the narrowest margin named.
	ahead := func(r *results, era string) string {
		type col struct {
			metric, name string
			higher       bool
		}
		cols := []col{{"calls1", "calls/s at 1", true}, {"calls64", "calls/s at 64", true}, {"cpu64_us", "CPU/call at 64", false}, {"allocs", "allocs/call", false}}
		all, worst, worstName := true, 0.0, ""
		for _, c := range cols {
			mine, ok := summarize(r.values(key{mHTTP, "snodo", era}, c.metric))
			if !ok {
				return "n/a"
			}
			for _, peer := range []string{"go-sdk", "mcp-go"} {
				theirs, ok := summarize(r.values(key{mHTTP, peer, era}, c.metric))
				if !ok || theirs.med == 0 || mine.med == 0 {
					continue
				}
				margin := mine.med / theirs.med // how many times better
				if !c.higher {
					margin = theirs.med / mine.med
				}
				if margin <= 1 {
					all = false
				}
				if worstName == "" || margin < worst {
					worst, worstName = margin, c.name+" vs "+peer
				}
			}
		}
		return verdict(all, fmt.Sprintf("narrowest lead %.2f× (%s)", worst, worstName))
	}
	// vsCeiling: snodo's typed and Request rows against the minimal
	// client's, run by run, both at least want.
	vsCeiling := func(r *results, era string) string {
		all, parts := true, []string{}
		for _, row := range []string{"snodo", "snodo" + rawSuffix} {
			of := strings.TrimPrefix(row, "snodo")
			st, ok := summarize(r.ratiosVs(key{mHTTP, row, era}, ceiling+of, "calls64"))
			if !ok {
				return "n/a"
			}
			all = all && st.med >= 0.95
			name := "typed"
			if of != "" {
				name = "`Request`"
			}
			parts = append(parts, name+" "+st.format(ratioFmt))
		}
		return verdict(all, strings.Join(parts, ", "))
	}
	// cpuBar: snodo's typed CPU per call at 64 in flight against issue
	// 37's bar, the minimal client's in the same runs beside it (the bar
	// was set on a run where the minimal client's read 48.2 µs).
	cpuBar := func(r *results, era string) string {
		mine, ok := summarize(r.values(key{mHTTP, "snodo", era}, "cpu64_us"))
		theirs, ok2 := summarize(r.values(key{mHTTP, ceiling, era}, "cpu64_us"))
		ratio, ok3 := summarize(r.ratiosVs(key{mHTTP, "snodo", era}, ceiling, "cpu64_us"))
		if !ok || !ok2 || !ok3 {
			return "n/a"
		}
		return verdict(mine.med <= 53.8, fmt.Sprintf("%.1f µs (the minimal client's %.1f µs: %s)", mine.med, theirs.med, ratio.format(ratioFmt)))
	}
	return []target{
		{"37: calls/s ≥ 0.95× the minimal client's, 64 in flight (typed, `Request`)", vsCeiling},
		{"37: client CPU per call ≤ 53.8 µs, typed, 64 in flight", cpuBar},
		{"30: calls/s ≥ 2× go-sdk's, 64 in flight", vsPeer("calls64", 2, false)},
		{"30: client CPU per call ≤ 0.5× go-sdk's, 64 in flight", vsPeer("cpu64_us", 0.5, true)},
		{"25: ahead of go-sdk and mcp-go on calls/s (1 and 64 in flight), CPU per call and allocations", ahead},
	}
}
