package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/snodo/snodo/bench/clients"
	"github.com/snodo/snodo/bench/server"
)

// The gateway section of the report lies between these markers, so that
// -only gateway can measure it again alone.
const (
	gatewayBegin = "<!-- gateway:begin (make bench-compare writes this section; make bench-gateway rewrites it alone) -->\n"
	gatewayEnd   = "<!-- gateway:end -->\n"
)

// gatewayKey is the one series of the gateway measurement: each run
// measures both ways, their metrics named "direct:…" and "gateway:…".
var gatewayKey = key{measure: mGateway, client: httpPeer}

// gatewayGoal is issue 39's bound on the p50 a call through snodo serve
// adds at 1 in flight, in µs.
const gatewayGoal = 100

// measureGateway is one run of the gateway measurement: go-sdk's client
// calls echo, modern era, one call at a time, on the fast HTTP server
// directly, through the bare forwarder (benchserver -forward: the floor of
// any HTTP front for the same server on stdio) and through `snodo serve`
// in front of the same server on stdio (each a process of its own), the
// order of the ways rotated by j.Run.
func measureGateway(j job) (map[string]float64, error) {
	direct, err := server.StartHTTP(j.Server)
	if err != nil {
		return nil, err
	}
	defer direct.Close()
	floor, err := server.StartHTTP(j.Server, "-forward")
	if err != nil {
		return nil, err
	}
	defer floor.Close()
	serve := exec.Command(j.Snodo, "serve", "--http", "127.0.0.1:0", "--", j.Server, "-fast")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := serve.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	sc := bufio.NewScanner(stdout)
	var url string
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "serving "); ok {
			url = rest
			break
		}
	}
	if url == "" {
		return nil, fmt.Errorf("snodo serve printed no URL")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	ways := []struct{ name, url string }{{"direct", direct.URL}, {"floor", floor.URL}, {"gateway", url}}
	k := j.Run % len(ways)
	ways = append(ways[k:], ways[:k]...)
	res := map[string]float64{}
	for _, w := range ways {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		c, err := clients.Connect(ctx, httpPeer, clients.Options{URL: w.url, Era: clients.Modern})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		args := json.RawMessage(`{"text":"hello"}`)
		for range j.Count / 4 {
			if _, err := c.Call(ctx, "echo", args); err != nil {
				cancel()
				return nil, err
			}
		}
		var lat latencies
		t0 := time.Now()
		for range j.Count {
			s := time.Now()
			if _, err := c.Call(ctx, "echo", args); err != nil {
				cancel()
				return nil, err
			}
			lat.add(time.Since(s))
		}
		res[w.name+":calls"] = float64(j.Count) / time.Since(t0).Seconds()
		res[w.name+":p50_us"] = lat.quantile(0.50)
		res[w.name+":p99_us"] = lat.quantile(0.99)
		c.Close()
		cancel()
	}
	return res, nil
}

// addedP50s is each run's p50 of way less its p50 of base.
func (r *results) addedP50s(way, base string) []float64 {
	var out []float64
	for _, m := range r.runs[gatewayKey] {
		g, ok1 := m[way+":p50_us"]
		d, ok2 := m[base+":p50_us"]
		if ok1 && ok2 {
			out = append(out, g-d)
		}
	}
	return out
}

// renderGateway is the gateway section, markers included.
func renderGateway(s settings, r *results) []byte {
	var b bytes.Buffer
	notes := &footnotes{}
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("%s", gatewayBegin)
	p("## Through the gateway (`snodo serve`)\n\n")
	p("Measured %s with snodo %s, %d run(s) of %d calls per way; load average %s at the end. "+
		"go-sdk's client calls `echo` one call at a time, modern era, over Streamable HTTP: on the fast HTTP server directly, "+
		"through a bare forwarder in front of the same server on stdio (`benchserver -http … -forward`: net/http's server and a pipe each way, one exchange at a time, nothing checked or decoded: the floor of any HTTP front for a stdio server), "+
		"and through `snodo serve --http … -- benchserver -fast` (the gateway, a supervised client and the same server on stdio), each a process of its own; "+
		"the order of the three ways rotates from run to run.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), snodoVersion(), s.gatewayRuns, s.gatewayCalls, loadAvg())
	p("| | calls/s, 1 in flight | p50 µs | p99 µs |\n|---|---|---|---|\n")
	for _, w := range []string{"direct", "floor", "gateway"} {
		name := map[string]string{"direct": "the server directly", "floor": "through the bare forwarder (the floor)", "gateway": "through `snodo serve`"}[w]
		p("| %s | %s | %s | %s |\n", name, r.cell(gatewayKey, w+":calls", human, notes),
			r.cell(gatewayKey, w+":p50_us", human, notes), r.cell(gatewayKey, w+":p99_us", human, notes))
	}
	p("\n%s\n\n", gatewayGoalLine(r))
	notes.write(&b)
	p("%s", gatewayEnd)
	return b.Bytes()
}

// gatewayGoalLine says how the added p50 compares with the goal.
func gatewayGoalLine(r *results) string {
	st, ok := summarize(r.addedP50s("gateway", "direct"))
	if !ok {
		return "Added p50: not measured."
	}
	verdict := "met"
	if st.med > gatewayGoal {
		verdict = "missed"
	}
	signed := func(v float64) string { return fmt.Sprintf("%+.0f", v) }
	line := fmt.Sprintf("Added p50 at 1 in flight: %s µs (goal: at most %d µs; %s).", st.format(signed), gatewayGoal, verdict)
	if fl, ok := summarize(r.addedP50s("floor", "direct")); ok {
		over, _ := summarize(r.addedP50s("gateway", "floor"))
		line += fmt.Sprintf(" The bare forwarder adds %s µs to the same calls; the gateway adds %s µs over it.", fl.format(signed), over.format(signed))
	}
	return line
}
