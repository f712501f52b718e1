package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

// snodoBin is the CLI under test, built once by TestMain.
var snodoBin string

// TestMain builds the snodo binary, runs the tests against it and checks
// that the test process leaked no goroutine.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "snodo-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	snodoBin = filepath.Join(dir, "snodo")
	if out, err := exec.Command("go", "build", "-o", snodoBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building snodo: %v\n%s", err, out)
		os.Exit(1)
	}
	// The bridge tests run snodo's actor system in this process:
	// testutil's goleak options leave out its dead-letter throttle.
	testutil.VerifyTestMain(m, func() { _ = os.RemoveAll(dir) })
}

// result is one run of the CLI.
type result struct {
	stdout, stderr string
	code           int
}

// snodo runs the CLI with args and waits for it (at most 30 s).
func snodo(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, snodoBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		t.Fatalf("snodo %q did not finish within 30 s; stderr:\n%s", args, stderr.String())
	}
	if err != nil && code < 0 {
		t.Fatalf("snodo %q: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// against appends "-- <test server> flags…" to args.
func against(t *testing.T, args []string, serverFlags ...string) []string {
	return append(append(args, "--", testutil.ServerPath(t)), serverFlags...)
}

// demoServer is the server command of the demo server, with a short
// plugin delay.
func demoServer(pluginDelay string) []string {
	return []string{"--", snodoBin, "__demo-server", "-plugin-delay", pluginDelay, "-tick", "10ms"}
}

func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// oneErrorLine checks that stderr is one line containing every part.
func (r result) oneErrorLine(t *testing.T, parts ...string) {
	t.Helper()
	if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("stderr is not one line:\n%s", r.stderr)
	}
	for _, p := range parts {
		if !strings.Contains(r.stderr, p) {
			t.Errorf("stderr %q does not contain %q", r.stderr, p)
		}
	}
}

// decode checks stdout is exactly one JSON document and decodes it.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", r.stdout)
	}
}

func TestInfo(t *testing.T) {
	r := snodo(t, against(t, []string{"info"})...).want(t, 0)
	for _, s := range []string{"snodo-testserver 1.0.0", "modern, protocol 2026-07-28", "tools (list changes)", "test server"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("info output lacks %q:\n%s", s, r.stdout)
		}
	}
}

func TestInfoLegacyJSON(t *testing.T) {
	r := snodo(t, against(t, []string{"--json", "info"}, "-era", "legacy")...).want(t, 0)
	var v struct {
		Era, ProtocolVersion string
		ServerInfo           struct{ Name string }
	}
	r.decode(t, &v)
	if v.Era != "legacy" || v.ProtocolVersion != "2025-11-25" || v.ServerInfo.Name != "snodo-testserver" {
		t.Fatalf("info %+v", v)
	}
}

func TestTools(t *testing.T) {
	r := snodo(t, against(t, []string{"tools"})...).want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "echo  Echoes message.") {
		t.Fatalf("tools table:\n%s", r.stdout)
	}
}

func TestToolsJSON(t *testing.T) {
	r := snodo(t, against(t, []string{"--json", "tools"})...).want(t, 0)
	var v struct {
		Tools []struct {
			Name        string
			InputSchema json.RawMessage
		}
	}
	r.decode(t, &v)
	if len(v.Tools) != 5 || v.Tools[1].Name != "add" || len(v.Tools[1].InputSchema) == 0 {
		t.Fatalf("tools %+v", v.Tools)
	}
}

func TestCallEcho(t *testing.T) {
	r := snodo(t, against(t, []string{"call", "echo", `{"message":"hi"}`})...).want(t, 0)
	if r.stdout != "hi\n" {
		t.Fatalf("stdout %q, want the tool's text", r.stdout)
	}
}

func TestCallJSON(t *testing.T) {
	r := snodo(t, against(t, []string{"--json", "call", "add", `{"a":2,"b":3}`})...).want(t, 0)
	var v struct {
		StructuredContent struct{ Sum float64 }
	}
	r.decode(t, &v)
	if v.StructuredContent.Sum != 5 {
		t.Fatalf("result %s", r.stdout)
	}
}

func TestCallToolFails(t *testing.T) {
	r := snodo(t, against(t, []string{"call", "fail"})...).want(t, 1)
	r.oneErrorLine(t, "the tool reported an error: tool failed")
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
}

func TestCallUnknownTool(t *testing.T) {
	r := snodo(t, against(t, []string{"call", "nosuch"})...).want(t, 1)
	r.oneErrorLine(t, "-32602", "unknown tool nosuch", "snodo tools")
}

func TestRequest(t *testing.T) {
	r := snodo(t, against(t, []string{"--json", "request", "test/echo", `{"x":[1,2]}`})...).want(t, 0)
	var v struct{ X []int }
	r.decode(t, &v)
	if len(v.X) != 2 {
		t.Fatalf("result %s", r.stdout)
	}
	r = snodo(t, against(t, []string{"request", "test/pid"})...).want(t, 0)
	if !strings.HasPrefix(r.stdout, "{\n  \"pid\": ") {
		t.Fatalf("human output is not indented JSON:\n%s", r.stdout)
	}
	// Multi-line params reach the server as one line (it would otherwise
	// get fragments and the request would time out).
	r = snodo(t, against(t, []string{"--json", "--timeout", "5s", "request", "test/echo", "{\n  \"x\": [\n    1,\n    2\n  ]\n}"})...).want(t, 0)
	r.decode(t, &v)
	if len(v.X) != 2 {
		t.Fatalf("multi-line params: result %s", r.stdout)
	}
}

func TestRequestServerError(t *testing.T) {
	r := snodo(t, against(t, []string{"request", "test/error", `{"code":4242,"message":"no luck"}`})...).want(t, 1)
	r.oneErrorLine(t, "error 4242: no luck")
	r = snodo(t, against(t, []string{"request", "no/such"})...).want(t, 1)
	r.oneErrorLine(t, "-32601", "check its name")
}

func TestUsageErrors(t *testing.T) {
	server := testutil.ServerPath(t)
	for name, args := range map[string][]string{
		"no command":         {},
		"unknown command":    {"frobnicate", "--", server},
		"no server":          {"tools"},
		"call without name":  {"call", "--", server},
		"empty tool name":    {"call", "", "--", server},
		"empty method":       {"request", " ", "--", server},
		"args not an object": {"call", "echo", "[1]", "--", server},
		"args not JSON":      {"call", "echo", "{", "--", server},
		"args null":          {"call", "echo", "null", "--", server},
		"params null":        {"request", "test/echo", " null ", "--", server},
		"listen flag":        {"--tools", "info", "--", server},
		"unknown flag":       {"--frob", "info", "--", server},
		"bad env":            {"--env", "NOVALUE", "info", "--", server},
		"unset with a value": {"--unset", "PATH=/usr/bin", "info", "--", server},
		"line cap too small": {"--max-line-bytes", "10", "info", "--", server},
		"line cap too large": {"--max-line-bytes", "1073741825", "info", "--", server},
		"zero timeout":       {"--timeout", "0s", "info", "--", server},
		"root not a dir":     {"--root", "/nonexistent/dir", "info", "--", server},
		"demo with server":   {"demo", "--", server},
	} {
		t.Run(name, func(t *testing.T) {
			r := snodo(t, args...).want(t, 2)
			if !strings.Contains(r.stderr, "snodo -h") {
				t.Errorf("stderr does not point to the usage:\n%s", r.stderr)
			}
			if strings.Contains(name, "command") && !strings.Contains(r.stderr, "servers, node, bridge, serve, logout or demo") {
				t.Errorf("stderr does not list every command:\n%s", r.stderr)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	if r := snodo(t, "-h").want(t, 0); !strings.Contains(r.stderr, "snodo [flags] call NAME") {
		t.Errorf("usage:\n%s", r.stderr)
	}
	if r := snodo(t, "help").want(t, 0); !strings.Contains(r.stdout, "--max-line-bytes") {
		t.Errorf("help:\n%s", r.stdout)
	}
	if r := snodo(t, "--version").want(t, 0); !strings.HasPrefix(r.stdout, "snodo ") {
		t.Errorf("version: %q", r.stdout)
	}
}

func TestEnvUnsetDir(t *testing.T) {
	var env struct {
		Value string
		Set   bool
	}
	snodo(t, against(t, []string{"--json", "--env", "SNODO_CLI=yes", "request", "test/env", `{"name":"SNODO_CLI"}`})...).
		want(t, 0).decode(t, &env)
	if env.Value != "yes" {
		t.Errorf("--env: %+v", env)
	}
	t.Setenv("SNODO_CLI_GONE", "1")
	env.Set = true
	snodo(t, against(t, []string{"--json", "--unset", "SNODO_CLI_GONE", "request", "test/env", `{"name":"SNODO_CLI_GONE"}`})...).
		want(t, 0).decode(t, &env)
	if env.Set {
		t.Errorf("--unset: %+v", env)
	}
	dir := t.TempDir()
	var cwd struct{ Dir string }
	snodo(t, against(t, []string{"--json", "--dir", dir, "request", "test/cwd"})...).want(t, 0).decode(t, &cwd)
	if cwd.Dir != dir {
		t.Errorf("--dir: server ran in %q, want %q", cwd.Dir, dir)
	}
	// A --dir that is missing says so; one that is a file says that.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]string{filepath.Join(dir, "missing"): "no such file or directory", file: "not a directory"} {
		if r := snodo(t, against(t, []string{"--dir", d, "info"})...).want(t, 2); !strings.Contains(r.stderr, want) {
			t.Errorf("--dir %s: want %q in\n%s", d, want, r.stderr)
		}
	}
}

func TestProgressLinesWhenNotATerminal(t *testing.T) {
	r := snodo(t, against(t, []string{"call", "slow", `{"ms":60}`})...).want(t, 0)
	if !strings.Contains(r.stderr, "snodo: progress 10/60\n") || strings.Contains(r.stderr, "\r") {
		t.Fatalf("stderr, want plain progress lines:\n%q", r.stderr)
	}
	// 150 updates 10 ms apart give at most one line per 500 ms (the
	// first at once), and the last update always.
	start := time.Now()
	r = snodo(t, against(t, []string{"request", "test/progress", `{"count":150,"intervalMs":10}`})...).want(t, 0)
	took := time.Since(start)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if most := int(took/(500*time.Millisecond)) + 2; len(lines) < 2 || len(lines) > most ||
		lines[0] != "snodo: progress 1/150" || lines[len(lines)-1] != "snodo: progress 150/150" {
		t.Fatalf("want 2 to %d progress lines (%s), the first and the last update among them, got %d:\n%s", most, took, len(lines), r.stderr)
	}
	r = snodo(t, against(t, []string{"--quiet", "call", "slow", `{"ms":60}`})...).want(t, 0)
	if r.stderr != "" {
		t.Fatalf("--quiet still printed:\n%s", r.stderr)
	}
}

func TestTimeout(t *testing.T) {
	r := snodo(t, against(t, []string{"--timeout", "100ms", "request", "test/sleep", `{"ms":5000,"honorCancel":true}`})...).want(t, 1)
	r.oneErrorLine(t, "-32001", "--timeout")
}

func TestServerExits(t *testing.T) {
	r := snodo(t, against(t, []string{"request", "test/crash", `{"code":3}`})...).want(t, 1)
	r.oneErrorLine(t, "-32000", "status 3")
}

func TestServerCannotStart(t *testing.T) {
	r := snodo(t, "tools", "--", "/nonexistent/server").want(t, 1)
	r.oneErrorLine(t, "cannot start the server", "SERVER_CMD")
}

func TestDemo(t *testing.T) {
	start := time.Now()
	r := snodo(t, "demo").want(t, 0)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("demo took %v, want under 15 s", d)
	}
	for _, s := range []string{
		"1. Connect", "modern, protocol 2026-07-28",
		"2. List the tools", "countdown",
		"3. Call countdown", "progress 1/5", "progress 2/5", "progress 3/5", "progress 4/5", "progress 5/5", "Liftoff!",
		"4. Call greet", "What should I call you?", "Hello, Ada!",
		"5. Listen for tool changes", "notifications/tools/list_changed", "time ",
		"6. Close", "exited",
		"7. Over Streamable HTTP", "modern, protocol 2026-07-28", "progress 3/3", "Liftoff! (counted down from 3)",
		"closed; no connection left open",
	} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("demo output lacks %q", s)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", r.stdout)
	}
}

// TestEverythingServer runs the CLI against a reference server, the Go
// SDK's conformance server.
func TestEverythingServer(t *testing.T) {
	path, err := filepath.Abs("../../test/peers/bin/everything-server")
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		t.Fatalf("the reference server is not installed (%v): run bash test/peers/install.sh", err)
	}
	r := snodo(t, "tools", "--", path).want(t, 0)
	if strings.Count(r.stdout, "\n") < 3 {
		t.Fatalf("expected several tools:\n%s", r.stdout)
	}
	snodo(t, "--json", "info", "--", path).want(t, 0).decode(t, &map[string]any{})
}

// TestVerboseShowsTheWire: --verbose copies each line on the wire to
// stderr, "snodo → " for what the CLI sends and "snodo ← " for what the
// server answers, cut to 2000 bytes; stdout is unchanged.
func TestVerboseShowsTheWire(t *testing.T) {
	long := strings.Repeat("x", 3000)
	r := snodo(t, against(t, []string{"--verbose", "--json", "request", "test/echo", `{"long":"` + long + `"}`})...).want(t, 0)
	var v struct{ Long string }
	r.decode(t, &v)
	if v.Long != long {
		t.Fatalf("stdout:\n%.200s", r.stdout)
	}
	var sent, received []string
	for line := range strings.Lines(r.stderr) {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, "snodo → "); ok {
			sent = append(sent, rest)
		} else if rest, ok := strings.CutPrefix(line, "snodo ← "); ok {
			received = append(received, rest)
		}
	}
	if len(sent) == 0 || len(received) == 0 {
		t.Fatalf("stderr shows %d sent and %d received lines:\n%s", len(sent), len(received), r.stderr)
	}
	var echoSent, echoReceived bool
	for _, l := range sent {
		if strings.Contains(l, `"method":"test/echo"`) {
			echoSent = true
			if len(l) != 2000 {
				t.Errorf("the sent test/echo line shows %d bytes, want it cut to 2000", len(l))
			}
		}
	}
	for _, l := range received {
		if strings.Contains(l, `"long":"xxx`) {
			echoReceived = true
			if len(l) != 2000 {
				t.Errorf("the received answer shows %d bytes, want it cut to 2000", len(l))
			}
		}
	}
	if !echoSent || !echoReceived {
		t.Errorf("stderr lacks the request (%v) or its answer (%v):\n%.3000s", echoSent, echoReceived, r.stderr)
	}
	if !strings.HasPrefix(sent[0], "{") || !strings.HasSuffix(received[0], "}") {
		t.Errorf("lines are not shown whole: first sent %q, first received %q", sent[0], received[0])
	}
}

func TestTracePrintsEverySpan(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		r := snodo(t, against(t, []string{"--trace", "call", "slow", `{"ms":30}`}, "-era", era)...).want(t, 0)
		for _, want := range []string{
			"trace: ", "snodo call  ", "\n  tools/call slow  ", "gen_ai.tool.name=slow",
			"jsonrpc.request.id=", "network.transport=pipe", "· notifications/progress +",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", era, want, r.stderr)
			}
		}
	}
}

// A server with no tools is listed as an empty array, never null: a
// script iterating over .tools must not fail.
func TestToolsJSONOfNoTools(t *testing.T) {
	r := snodo(t, against(t, []string{"--json", "tools"}, "-empty-lists")...).want(t, 0)
	if strings.TrimSpace(r.stdout) != `{"tools":[]}` {
		t.Fatalf("stdout: %s", r.stdout)
	}
	if r := snodo(t, against(t, []string{"tools"}, "-empty-lists")...).want(t, 0); strings.TrimSpace(r.stdout) != "(no tools)" {
		t.Fatalf("stdout: %s", r.stdout)
	}
}

// A flag given an empty value (what "--root $DIR" becomes when DIR is
// unset) is a usage error naming the flag: --root ” shared the current
// directory with the server, --dir ” and --era ” were as if left out,
// --resource ” waited for updates of no URI, and --config ” and
// --server ” were reported as missing flags.
func TestEmptyFlagValues(t *testing.T) {
	server := testutil.ServerPath(t)
	for _, flagName := range []string{"root", "dir", "era", "sampling-reply", "env", "unset", "resource", "config", "server", "nats"} {
		t.Run(flagName, func(t *testing.T) {
			args := []string{"--" + flagName, "", "info", "--", server}
			switch flagName {
			case "resource":
				args = []string{"--resource", "", "listen", "--count", "1", "--", server}
			case "config", "server", "nats":
				args = []string{"--config", "x.json", "--server", "x", "info"}
				args[slices.Index(args, "--"+flagName)+1] = ""
				if flagName == "nats" {
					args = []string{"--nats", "", "--server", "x", "info"}
				}
			}
			r := snodo(t, args...).want(t, 2)
			if !strings.HasPrefix(r.stderr, "snodo: --"+flagName+" is empty: give its ") || !strings.Contains(r.stderr, "snodo -h") {
				t.Errorf("stderr:\n%s", r.stderr)
			}
		})
	}
	// One empty element among others counts as well.
	snodo(t, "--root", t.TempDir(), "--root", "", "info", "--", server).want(t, 2)
}
