//go:build linux

package main_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/test/httpserver"
	"github.com/snodo/snodo/test/testutil"
)

// nodeConfig writes an mcpServers file from name → test server flags.
func nodeConfig(t *testing.T, servers map[string][]string) string {
	t.Helper()
	doc := map[string]any{}
	for name, flags := range servers {
		doc[name] = map[string]any{"command": testutil.ServerPath(t), "args": flags}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": doc})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startServingNode runs `snodo node --config config` (an embedded NATS
// server) and returns once it serves, with its servers' PIDs and its
// NATS URL.
func startServingNode(t *testing.T, config string, servers int) (*snodoProc, []int, string) {
	t.Helper()
	p, url := startNode(t, "--config", config)
	var procs []int
	testutil.Eventually(t, func() bool { procs = descendants(p.cmd.Process.Pid); return len(procs) == servers }, 10*time.Second, "the node's servers")
	return p, procs, url
}

// startNode runs `snodo node args...` and returns once it serves, with
// the first line it printed (an embedded NATS server's URL, when it
// starts one). The node is stopped (SIGTERM) when the test ends, if it
// has not ended by then.
func startNode(t *testing.T, args ...string) (*snodoProc, string) {
	t.Helper()
	p := &snodoProc{cmd: exec.Command(snodoBin, append([]string{"node"}, args...)...), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = 5 * time.Second // a server left behind keeps stderr open
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan bool, 1)
	var first string
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if first == "" {
				first = sc.Text()
			}
			if strings.HasPrefix(sc.Text(), "serving ") {
				ok = true
				break
			}
		}
		serving <- ok
		for sc.Scan() {
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	if !testutil.Receive(t, serving, 30*time.Second, "the node's serving line") {
		<-p.done
		t.Fatalf("the node exited before serving; stderr:\n%s", p.stderr.String())
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	})
	return p, first
}

// A node drained by SIGINT or SIGTERM exits only once its servers have:
// even one that ignores EOF is stopped (the shutdown grace), not left
// running after snodo is gone.
func TestNodeLeavesNoServerBehind(t *testing.T) {
	config := nodeConfig(t, map[string][]string{"stubborn": {"-ignore-eof"}})
	p, servers, _ := startServingNode(t, config, 1)
	p.signal(t, syscall.SIGINT, "SIGINT")
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d, want 0; stderr:\n%s", code, p.stderr.String())
	}
	for _, pid := range servers {
		if testutil.Running(pid) {
			t.Errorf("server %d still runs after the node exited; stderr:\n%s", pid, p.stderr.String())
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A name NATS cannot carry (a dot, a space, a wildcard) fails the node
// before it starts anything: no NATS server, no MCP server.
func TestNodeRefusesNamesNATSCannotCarry(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "journal")
	for _, bad := range []string{"a.b", "my server", "files*", ">"} {
		config := nodeConfig(t, map[string][]string{"ok": {"-journal", journal}, bad: nil})
		r := snodo(t, "node", "--config", config).want(t, 1)
		r.oneErrorLine(t, config, `server "`+bad+`"`, "letters, digits")
		if r.stdout != "" {
			t.Errorf("the node printed %q: it started something", r.stdout)
		}
	}
	if _, err := os.Stat(journal); err == nil {
		t.Error("a server was started")
	}
}

// A server of the file that cannot start fails the node, saying which
// and what to do; the node serves nothing and leaves nothing running.
func TestNodeServerThatCannotStart(t *testing.T) {
	config := filepath.Join(t.TempDir(), "servers.json")
	doc := `{"mcpServers": {"ok": {"command": "` + testutil.ServerPath(t) + `"}, "broken": {"command": "/nonexistent/server"}}}`
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := snodo(t, "node", "--config", config).want(t, 1)
	r.oneErrorLine(t, "starting broken", "/nonexistent/server", config, `"disabled": true`)
	if strings.Contains(r.stdout, "serving") {
		t.Errorf("the node served: %q", r.stdout)
	}
}

// SIGINT while the node starts its servers (one that answers nothing
// takes the 10 s era probe): the start is abandoned, the node exits 130
// at once and leaves nothing running.
func TestNodeInterruptedWhileStarting(t *testing.T) {
	config := nodeConfig(t, map[string][]string{"silent": {"-era", "modern", "-silent-discover", "-ignore-eof"}})
	p := startCLI(t, []string{"node", "--config", config})
	server := p.server(t)
	began := time.Now()
	p.signal(t, syscall.SIGINT, "SIGINT")
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the node took %v to exit", took)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit status %d, want 130; stderr:\n%s", code, p.stderr.String())
	}
	if testutil.Running(server) {
		t.Errorf("server %d outlived the node", server)
		_ = syscall.Kill(server, syscall.SIGKILL)
	}
}

// `info` of a served name says which host answered, in the table and in
// the --json document.
func TestRemoteInfoNamesTheHost(t *testing.T) {
	p, _, url := startServingNode(t, nodeConfig(t, map[string][]string{"calc": nil}), 1)
	defer p.signal(t, syscall.SIGTERM, "SIGTERM")
	r := snodo(t, "--nats", url, "--server", "calc", "info").want(t, 0)
	if !regexp.MustCompile(`(?m)^server +snodo-testserver`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^host +\S+:\d+ \(\w+\)$`).MatchString(r.stdout) {
		t.Errorf("info table:\n%s", r.stdout)
	}
	col := func(prefix string) int {
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, prefix) {
				return len(line) - len(strings.TrimLeft(line[len(prefix):], " "))
			}
		}
		return -1
	}
	if col("server") != col("host") {
		t.Errorf("the host row is not aligned with the others:\n%s", r.stdout)
	}
	r = snodo(t, "--nats", url, "--server", "calc", "--json", "info").want(t, 0)
	var doc struct{ Era, Host, Label string }
	r.decode(t, &doc)
	if doc.Era != "modern" || doc.Host == "" || doc.Label == "" {
		t.Errorf("info --json: %s", r.stdout)
	}
}

// The flags of a remote call that apply on the caller's side work over
// NATS as they do locally: --max-input-rounds bounds the input_required
// rounds, --trace prints the spans.
func TestRemoteCallerFlags(t *testing.T) {
	p, _, url := startServingNode(t, nodeConfig(t, map[string][]string{"calc": {"-era", "modern"}}), 1)
	defer p.signal(t, syscall.SIGTERM, "SIGTERM")
	root := t.TempDir()
	args := []string{"--nats", url, "--server", "calc", "--root", root, "call", "input", `{"rounds":3}`}
	snodo(t, append([]string{"--max-input-rounds", "3"}, args...)...).want(t, 0)
	r := snodo(t, append([]string{"--max-input-rounds", "2"}, args...)...).want(t, 1)
	r.oneErrorLine(t, "still needed input after 2 rounds")
	r = snodo(t, "--nats", url, "--server", "calc", "--trace", "tools").want(t, 0)
	if !strings.Contains(r.stderr, "tools/list") {
		t.Errorf("--trace printed no tools/list span:\n%s", r.stderr)
	}
}

// silentNATS listens on a local port, accepts connections and never
// answers: a NATS client waits there for the server's INFO (the CLI for
// 10 s, its nats.Timeout). The channel gets a value at each connection.
func silentNATS(t *testing.T) (url string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "nats://" + ln.Addr().String(), ch
}

// SIGINT while a NATS command connects to a NATS server that does not
// answer: the command ends at once (not at the 10 s nats.Timeout), exits
// 130, and a node leaves none of the servers it had started running.
func TestInterruptedWhileConnectingToNATS(t *testing.T) {
	config := nodeConfig(t, map[string][]string{"one": nil})
	for name, args := range map[string][]string{
		"call":    {"--server", "x", "tools"},
		"servers": {"servers"},
		"node":    {"node", "--config", config},
	} {
		t.Run(name, func(t *testing.T) {
			url, accepted := silentNATS(t)
			p := startCLI(t, append([]string{"--nats", url}, args...))
			testutil.Receive(t, accepted, 30*time.Second, "the CLI's NATS connection")
			servers := descendants(p.cmd.Process.Pid)
			began := time.Now()
			p.signal(t, syscall.SIGINT, "SIGINT")
			took := time.Since(began)
			t.Logf("%s: exited %v after SIGINT", name, took.Round(time.Millisecond))
			if took > 5*time.Second {
				t.Errorf("took %v to exit", took)
			}
			if code := p.cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130; stderr:\n%s", code, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), "interrupted") {
				t.Errorf("stderr does not say it was interrupted:\n%s", p.stderr.String())
			}
			for _, pid := range servers {
				if testutil.Running(pid) {
					t.Errorf("server %d outlived snodo", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// `snodo node` serves an "http" entry of its file as it serves a command:
// the node reaches the server over Streamable HTTP (snodo's HTTP test
// server, in this process, both eras) with the entry's headers, and a
// caller on NATS lists and calls it by name through remote, beside a
// command entry. A legacy session the server forgets is replaced by a
// new one; stopping the node ends the session (DELETE).
func TestNodeServesAnHTTPEntry(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			srv := &httpserver.HTTP{Era: era}
			var keyed, unkeyed atomic.Int64
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Api-Key") == "k" {
					keyed.Add(1)
				} else {
					unkeyed.Add(1)
				}
				srv.ServeHTTP(w, r)
			}))
			defer hs.Close()
			config := filepath.Join(t.TempDir(), "servers.json")
			doc := `{"mcpServers": {
				"web": {"type": "http", "url": "` + hs.URL + `/mcp", "headers": {"X-Api-Key": "k"}},
				"calc": {"command": "` + testutil.ServerPath(t) + `"}}}`
			if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			p, _, url := startServingNode(t, config, 1) // one process: calc's
			r := snodo(t, "--nats", url, "--server", "web", "tools").want(t, 0)
			if !strings.Contains(r.stdout, "echo") {
				t.Errorf("tools of web over NATS:\n%s", r.stdout)
			}
			var res struct {
				Content []struct{ Text string } `json:"content"`
			}
			snodo(t, "--nats", url, "--server", "web", "--json", "call", "echo", `{"text":"over NATS"}`).want(t, 0).decode(t, &res)
			if len(res.Content) != 1 || res.Content[0].Text != "over NATS" {
				t.Errorf("call of web over NATS: %+v", res)
			}
			r = snodo(t, "--nats", url, "--server", "web", "info").want(t, 0)
			if !strings.Contains(r.stdout, "snodo-http-testserver") || !strings.Contains(r.stdout, era+", protocol") {
				t.Errorf("info of web over NATS:\n%s", r.stdout)
			}
			snodo(t, "--nats", url, "--server", "calc", "tools").want(t, 0)
			if srv.Calls() != 1 || keyed.Load() == 0 || unkeyed.Load() != 0 {
				t.Errorf("the server saw %d calls, %d requests with the entry's header and %d without", srv.Calls(), keyed.Load(), unkeyed.Load())
			}
			if era == "legacy" {
				// The server forgets its sessions (as a restarted one
				// does): the node's supervised client meets the 404 and
				// opens a new session, and the name answers again.
				opened := srv.Sessions()
				srv.Expire()
				deadline := time.Now().Add(30 * time.Second)
				for {
					r := snodo(t, "--nats", url, "--server", "web", "call", "echo", `{"text":"again"}`)
					if r.code == 0 {
						break
					}
					t.Logf("after the end: %s", strings.TrimSpace(r.stderr))
					if !strings.Contains(r.stderr, "session") && !strings.Contains(r.stderr, "restart") {
						t.Errorf("a call that met the expired session says: %s", r.stderr)
					}
					if time.Now().After(deadline) {
						t.Fatalf("web did not answer within 30 s of its session's end: %s", r.stderr)
					}
					time.Sleep(100 * time.Millisecond)
				}
				if srv.Sessions() <= opened {
					t.Errorf("no new session: %d opened before the end, %d after", opened, srv.Sessions())
				}
			}
			p.signal(t, syscall.SIGTERM, "SIGTERM")
			if code := p.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit status %d, want 0; stderr:\n%s", code, p.stderr.String())
			}
			if era == "legacy" && srv.Deletes() == 0 {
				t.Error("the node stopped without ending its session (no DELETE)")
			}
		})
	}
}
