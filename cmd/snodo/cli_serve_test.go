//go:build linux

package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
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

// startNodeAt runs `snodo node --config config --listen addr` and returns
// once it serves.
func startNodeAt(t *testing.T, config, addr string) *snodoProc {
	t.Helper()
	p, _ := startNode(t, "--config", config, "--listen", addr)
	return p
}

// snodo serve --nats: /healthz names what no host serves (503), and a
// node restarted with the same --listen address serves again at the same
// URL: serve's names come back without restarting serve.
func TestServeNATSAcrossNodeRestart(t *testing.T) {
	config := nodeConfig(t, map[string][]string{"echo": nil})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	node := startNodeAt(t, config, addr)
	_, urls := startServe(t, "--nats", "nats://"+addr, "--server", "echo,ghost")
	if len(urls) != 2 {
		t.Fatalf("serving %v, want two URLs", urls)
	}
	if code, body := healthz(t, urls[0]); code != http.StatusServiceUnavailable || !strings.Contains(body, `"ghost"`) || strings.Contains(body, `"echo"`) {
		t.Fatalf("healthz %d %s, want 503 naming ghost only", code, body)
	}
	node.signal(t, syscall.SIGTERM, "SIGTERM")
	testutil.Eventually(t, func() bool { _, body := healthz(t, urls[0]); return strings.Contains(body, `"echo"`) }, 15*time.Second, "echo down with its node")
	startNodeAt(t, config, addr) // a new node at the same URL
	testutil.Eventually(t, func() bool { _, body := healthz(t, urls[0]); return !strings.Contains(body, `"echo"`) }, 20*time.Second, "echo back with the new node")
	c, err := sn.ConnectHTTP(context.Background(), urls[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if res, err := c.CallTool(context.Background(), "echo", map[string]any{"message": "again"}); err != nil || !strings.Contains(res.Content[0].Text, "again") {
		t.Fatalf("call after the node restart: %v %+v", err, res)
	}
}

// serve --auth-issuer --auth-audience: a request without a bearer token
// gets 401 naming the protected resource metadata, which serve publishes
// with the issuer; /healthz needs no token.
func TestServeAuth(t *testing.T) {
	_, urls := startServe(t, "--auth-issuer", "https://login.example.com", "--auth-audience", "mcp", "--", testutil.ServerPath(t))
	resp, err := http.Post(urls[0], "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	meta := strings.Replace(urls[0], "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+meta+`"`) {
		t.Fatalf("%d %q, want 401 naming %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), meta)
	}
	mresp, err := http.Get(meta)
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(mresp.Body).Decode(&prm); err != nil || prm.Resource != urls[0] || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != "https://login.example.com" {
		t.Fatalf("metadata %+v, %v", prm, err)
	}
	if code, body := healthz(t, urls[0]); code != http.StatusOK {
		t.Fatalf("healthz %d %s, want 200 without a token", code, body)
	}
}

// serve's Origin and Host checks: a foreign Origin gets 403 unless
// --allow-origin names it; a non-loopback Host on a loopback address 403
// unless --allow-host names it.
func TestServeOriginAndHost(t *testing.T) {
	_, urls := startServe(t, "--allow-origin", "https://app.example", "--allow-host", "mcp.example.com", "--", testutil.ServerPath(t))
	status := func(origin, host string) int {
		req, _ := http.NewRequest(http.MethodPost, urls[0], strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		origin, host string
		want         int
	}{
		{"", "", http.StatusAccepted},
		{"https://app.example", "", http.StatusAccepted},
		{"https://evil.example", "", http.StatusForbidden},
		{"", "mcp.example.com", http.StatusAccepted},
		{"", "rebound.example", http.StatusForbidden},
	} {
		if got := status(c.origin, c.host); got != c.want {
			t.Errorf("Origin %q Host %q: %d, want %d", c.origin, c.host, got, c.want)
		}
	}
	snodo(t, "serve", "--http", "127.0.0.1:0", "--allow-origin", "app.example", "--", "x").want(t, 2)
}
