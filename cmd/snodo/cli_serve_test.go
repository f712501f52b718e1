//go:build linux

package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	sn "github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// startServe runs `snodo serve --http 127.0.0.1:0 args...` and returns
// once it serves, with the URLs it printed.
func startServe(t *testing.T, args ...string) (*snodoProc, []string) {
	t.Helper()
	p := &snodoProc{cmd: exec.Command(snodoBin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var got []string
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "serving "); ok {
				got = strings.Fields(rest)
				break
			}
		}
		urls <- got
		for sc.Scan() {
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	got := testutil.Receive(t, urls, 30*time.Second, "serve's serving line")
	if len(got) == 0 {
		<-p.done
		t.Fatalf("serve exited before serving; stderr:\n%s", p.stderr.String())
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	})
	return p, got
}

func healthz(t *testing.T, mcpURL string) (int, string) {
	t.Helper()
	base := mcpURL[:strings.Index(mcpURL, "/mcp")]
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, string(body)
}

// snodo serve -- CMD: the server at /mcp for clients of both eras,
// /healthz 200 while it runs; SIGTERM
// ends serve (exit 0) and its server.
func TestServeCommand(t *testing.T) {
	p, urls := startServe(t, "--", testutil.ServerPath(t), "-era", "legacy")
	if len(urls) != 1 || !strings.HasSuffix(urls[0], "/mcp") {
		t.Fatalf("serving %v, want one URL ending in /mcp", urls)
	}
	ctx := context.Background()
	for _, era := range []sn.Era{sn.EraLegacy, ""} {
		var opts []sn.Option
		if era != "" {
			opts = append(opts, sn.WithEra(era))
		}
		c, err := sn.ConnectHTTP(ctx, urls[0], opts...)
		if err != nil {
			t.Fatalf("connect (%q): %v; stderr:\n%s", era, err, p.stderr.String())
		}
		res, err := c.CallTool(ctx, "echo", map[string]any{"message": "served"})
		if err != nil || !strings.Contains(res.Content[0].Text, "served") {
			t.Fatalf("call (%q): %v %+v", era, err, res)
		}
		_ = c.Close()
	}
	if code, body := healthz(t, urls[0]); code != http.StatusOK {
		t.Fatalf("healthz %d %s, want 200", code, body)
	}
	servers := descendants(p.cmd.Process.Pid)
	if len(servers) != 1 {
		t.Fatalf("serve runs %d servers, want 1", len(servers))
	}
	p.signal(t, syscall.SIGTERM, "SIGTERM")
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d, want 0; stderr:\n%s", code, p.stderr.String())
	}
	testutil.AssertReaped(t, servers[0], 10*time.Second)
}

// serve's usage errors: no --http, two sources, --server without --nats.
func TestServeUsage(t *testing.T) {
	snodo(t, "serve", "--", "x").want(t, 2)
	snodo(t, "serve", "--http", "127.0.0.1:0").want(t, 2)
	snodo(t, "serve", "--http", "127.0.0.1:0", "--config", "f.json", "--", "x").want(t, 2)
	snodo(t, "serve", "--http", "127.0.0.1:0", "--server", "a", "--", "x").want(t, 2)
	snodo(t, "tools", "--http", "127.0.0.1:0", "--", "x").want(t, 2)
	snodo(t, "tools", "--listen", "127.0.0.1:4222", "--", "x").want(t, 2)
}
