package testserver_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

func TestEcho(t *testing.T) {
	for _, fast := range []bool{false, true} {
		var flags []string
		if fast {
			flags = append(flags, "-fast")
		}
		p := start(t, flags...)
		p.send(`{"jsonrpc":"2.0","id":7,"method":"test/echo","params":{ "a" : "<b>&", "n":[1, 2] }}`)
		p.send(`{"id":"x","params":[1],"method":"test/echo","jsonrpc":"2.0"}`)
		want := map[string]bool{
			`{"jsonrpc":"2.0","id":7,"result":{ "a" : "<b>&", "n":[1, 2] }}`: true,
			`{"jsonrpc":"2.0","id":"x","result":[1]}`:                        true,
		}
		for range 2 { // concurrent handling: any order unless -fast
			if got := string(p.line()); !want[got] {
				t.Errorf("fast=%v: unexpected %s", fast, got)
			}
		}
		if err := p.exit(); err != nil {
			t.Errorf("exit: %v", err)
		}
	}
}

func TestDiscoverEras(t *testing.T) {
	type discover struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		ResultType        string                     `json:"resultType"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}
	for _, era := range []string{"modern", "both"} {
		p := start(t, "-era", era)
		p.request(1, "server/discover", modern(nil))
		var d discover
		p.result(1, &d)
		if len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != "2026-07-28" || d.ResultType != "complete" ||
			d.Meta["io.modelcontextprotocol/serverInfo"].Name != "snodo-testserver" || d.Capabilities["tools"] == nil {
			t.Errorf("era %s: discover result %+v", era, d)
		}
		p.request(2, "server/discover", map[string]any{})
		if c := p.errorCode(2); c != -32601 {
			t.Errorf("era %s: no _meta: code %d", era, c)
		}
		p.request(3, "server/discover", map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
		if c := p.errorCode(3); c != -32602 {
			t.Errorf("era %s: no capabilities: code %d", era, c)
		}
		params := modern(nil)
		params["_meta"].(map[string]any)["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
		p.request(4, "tools/list", params)
		m := p.response(4)
		if m.Error == nil || m.Error.Code != -32022 ||
			string(m.Error.Data) != `{"requested":"2099-01-01","supported":["2026-07-28"]}` {
			t.Errorf("era %s: wrong version: %+v", era, m.Error)
		}
		p.request(5, "initialize", map[string]any{"protocolVersion": "2025-06-18"})
		if era == "modern" {
			if c := p.errorCode(5); c != -32601 {
				t.Errorf("modern initialize: code %d", c)
			}
		} else {
			var init struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			p.result(5, &init)
			if init.ProtocolVersion != "2025-06-18" {
				t.Errorf("initialize version %q", init.ProtocolVersion)
			}
		}
	}

	p := start(t, "-era", "legacy")
	p.request(1, "server/discover", modern(nil))
	if c := p.errorCode(1); c != -32601 {
		t.Errorf("legacy discover: code %d", c)
	}
	p.request(2, "initialize", map[string]any{"protocolVersion": "2030-01-01"})
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name string }
	}
	p.result(2, &init)
	if init.ProtocolVersion != "2025-11-25" || init.ServerInfo.Name != "snodo-testserver" {
		t.Errorf("legacy initialize: %+v", init)
	}
	p.request(3, "ping", nil)
	var empty map[string]any
	p.result(3, &empty)
}

func TestExitOnDiscoverStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := start(t, "-exit-on-discover", "-state-file", state)
	p.request(1, "server/discover", modern(nil))
	var exitErr *exec.ExitError
	if err := p.exit(); !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("first run: %v", err)
	}
	p = start(t, "-exit-on-discover", "-state-file", state)
	p.request(1, "server/discover", modern(nil))
	if c := p.errorCode(1); c != -32601 {
		t.Errorf("second run: code %d", c)
	}
}

func TestProgress(t *testing.T) {
	p := start(t)
	params := map[string]any{"_meta": map[string]any{"progressToken": "tok"}, "count": 3, "intervalMs": 5, "message": "m"}
	p.request(1, "test/progress", params)
	var done struct{ Done int }
	p.result(1, &done)
	if done.Done != 3 || len(p.notes) != 3 {
		t.Fatalf("done %d, %d notifications", done.Done, len(p.notes))
	}
	for i, n := range p.notes {
		want := `{"message":"m","progress":` + jsonText(i+1) + `,"progressToken":"tok","total":3}`
		if n.Method != "notifications/progress" || string(n.Params) != want {
			t.Errorf("notification %d: %s %s", i, n.Method, n.Params)
		}
	}
}

func TestSplitGarbageDuplicate(t *testing.T) {
	p := start(t)
	p.request(1, "test/split", map[string]any{"parts": 4, "delayMs": 20})
	if got := string(p.line()); got != `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}` {
		t.Errorf("split: %s", got)
	}
	p.request(2, "test/garbage", nil)
	want := []string{
		`not json`, `[1,2,3]`, `"a string"`, `{"jsonrpc":"2.0","id":999999,"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"\xff\xfe\"}}",
		`{}`, ``, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"ok":true}}`,
	}
	for i, w := range want {
		if got := string(p.line()); got != w {
			t.Errorf("garbage line %d: %q, want %q", i, got, w)
		}
	}
	p.request(3, "test/duplicate", nil)
	for _, w := range []string{`{"n":1}`, `{"n":1}`, `{"n":2}`} {
		if m := p.response(3); string(m.Result) != w {
			t.Errorf("duplicate: %s, want %s", m.Result, w)
		}
	}
}

func TestOverlong(t *testing.T) {
	p := start(t)
	const n = 1 << 20
	p.request(1, "test/overlong", map[string]any{"bytes": n})
	l := p.line()
	if len(l) != n || !strings.HasPrefix(string(l), `{"jsonrpc":"2.0","id":1,"result":"xxx`) || !strings.HasSuffix(string(l), `xx"}`) {
		t.Fatalf("overlong line: %d bytes, head %q", len(l), l[:min(len(l), 40)])
	}
	p.request(2, "test/pid", nil)
	var pid struct{ Pid int }
	p.result(2, &pid)
	if pid.Pid != p.cmd.Process.Pid {
		t.Errorf("pid %d, want %d", pid.Pid, p.cmd.Process.Pid)
	}
}

func TestServerRequestRoundTrip(t *testing.T) {
	p := start(t)
	p.request(1, "test/serverRequest", map[string]any{"method": "roots/list", "params": map[string]any{"x": 1}, "count": 2, "concurrent": true})
	seen := map[string]bool{}
	for range 2 {
		m := p.next()
		var id string
		if m.Method != "roots/list" || json.Unmarshal(m.ID, &id) != nil || string(m.Params) != `{"x":1}` {
			t.Fatalf("server request: %+v", m)
		}
		seen[id] = true
		p.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[{"uri":"file:///` + id + `"}]}}`)
	}
	if !seen["s1"] || !seen["s2"] {
		t.Errorf("ids %v, want s1 and s2", seen)
	}
	var res struct{ Responses []json.RawMessage }
	p.result(1, &res)
	if len(res.Responses) != 2 {
		t.Fatalf("responses: %s", res.Responses)
	}
	for _, r := range res.Responses {
		if !strings.Contains(string(r), `file:///s`) {
			t.Errorf("response %s", r)
		}
	}

	// A cancelled server request that still gets a late answer.
	p.request(2, "test/serverRequest", map[string]any{"cancelAfterMs": 20})
	req := p.next()
	if c := p.next(); c.Method != "notifications/cancelled" || !strings.Contains(string(c.Params), string(req.ID)) {
		t.Fatalf("want cancellation of %s, got %+v", req.ID, c)
	}
	p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"roots":[]}}`)
	p.result(2, &res)
	if len(res.Responses) != 1 || !strings.HasPrefix(string(res.Responses[0]), `{"cancelled":true,"late":{`) {
		t.Errorf("cancelled responses: %s", res.Responses)
	}
}

func TestCrashAndReap(t *testing.T) {
	for sig, want := range map[string]syscall.Signal{"SIGSEGV": syscall.SIGSEGV, "SIGTERM": syscall.SIGTERM, "SIGKILL": syscall.SIGKILL} {
		p := start(t)
		pid := p.cmd.Process.Pid
		p.request(1, "test/crash", map[string]any{"signal": sig, "stderr": "dying"})
		err := p.exit()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			t.Fatalf("%s: %v", sig, err)
		}
		ws := exitErr.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != want {
			t.Errorf("%s: wait status %v", sig, ws)
		}
		if !strings.Contains(p.stderrText(), "dying") {
			t.Errorf("%s: stderr %q", sig, p.stderrText())
		}
		testutil.AssertReaped(t, pid, 2*time.Second)
	}
	p := start(t)
	p.request(1, "test/crash", map[string]any{"code": 7})
	var exitErr *exec.ExitError
	if err := p.exit(); !errors.As(err, &exitErr) || exitErr.ExitCode() != 7 {
		t.Errorf("crash code: %v", err)
	}
}

func TestCloseStdinBreaksPipe(t *testing.T) {
	p := start(t)
	p.request(1, "test/closeStdin", nil)
	var empty map[string]any
	p.result(1, &empty)
	deadline := time.Now().Add(wait)
	for {
		_, err := p.in.Write([]byte("{}\n"))
		if errors.Is(err, syscall.EPIPE) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write after closeStdin: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestChildPIDs(t *testing.T) {
	p := start(t)
	p.request(1, "test/cwd", nil)
	var cwd struct{ Dir string }
	p.result(1, &cwd)
	found := false
	for _, pid := range testutil.ChildPIDs() {
		found = found || pid == p.cmd.Process.Pid
	}
	if !found || cwd.Dir == "" {
		t.Errorf("server %d not among children %v (cwd %q)", p.cmd.Process.Pid, testutil.ChildPIDs(), cwd.Dir)
	}
	if err := p.exit(); err != nil {
		t.Errorf("exit: %v", err)
	}
}
