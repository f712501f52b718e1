package main_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sn "github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// ssePeer is a real server of the HTTP+SSE transport of 2024-11-05 and
// a tool call it answers.
type ssePeer struct {
	name  string
	start func(t *testing.T, port string) *exec.Cmd // serves its stream on 127.0.0.1:port/sse
	tool  string
	args  string // the call's arguments, JSON
	want  string // in the call's text
}

func ssePeers() []ssePeer {
	return []ssePeer{
		{name: "go-sdk NewSSEHandler", tool: "greet", args: `{"name":"Ada"}`, want: "Hello, Ada!",
			start: func(t *testing.T, port string) *exec.Cmd {
				return exec.Command(testutil.PeerPath(t, "bin/gosdk-sse-server"), "-http", "127.0.0.1:"+port)
			}},
		{name: "mcp-go NewSSEServer", tool: "greet", args: `{"name":"Ada"}`, want: "Hello, Ada!",
			start: func(t *testing.T, port string) *exec.Cmd {
				return exec.Command(testutil.PeerPath(t, "bin/mcpgo-server"), "-http", "127.0.0.1:"+port, "-sse")
			}},
		{name: "server-everything sse", tool: "echo", args: `{"message":"hi"}`, want: "hi",
			start: func(t *testing.T, port string) *exec.Cmd {
				cmd := exec.Command(testutil.NodePath(t), testutil.PeerPath(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "sse")
				cmd.Env = append(os.Environ(), "PORT="+port)
				return cmd
			}},
	}
}

// startSSEPeer runs p on a free local port, waits until its stream
// answers and returns the stream's URL and a func that kills the process
// and starts it again on the same port; the process is killed and reaped
// when the test ends.
func startSSEPeer(t *testing.T, p ssePeer) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	url := "http://127.0.0.1:" + port + "/sse"
	var cmd *exec.Cmd
	stop := func() {
		if cmd != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			cmd = nil
		}
	}
	start := func() {
		cmd = p.start(t, port)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				cancel()
				return
			}
			cancel()
			if time.Now().After(deadline) {
				t.Fatalf("%s did not answer on %s within 30 s: %v", p.name, url, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	start()
	t.Cleanup(stop)
	return url, func() { stop(); start() }
}

// Servers that speak only the HTTP+SSE transport of 2024-11-05 list and
// call tools through the library (ConnectHTTP falls back to the old
// transport), through --url (the same fallback) and through a
// "type": "sse" entry of a --config file (the old transport directly);
// killed and started again on the same port, each serves the next call
// of a supervised client (its stream ended with the process).
func TestSSEPeers(t *testing.T) {
	for _, p := range ssePeers() {
		t.Run(p.name, func(t *testing.T) {
			url, restart := startSSEPeer(t, p)

			t.Run("library", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				c, err := sn.ConnectHTTP(ctx, url)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = c.Close(); <-c.Done() }()
				if c.Era() != sn.EraLegacy {
					t.Errorf("era %q, want legacy", c.Era())
				}
				tools, err := c.ListTools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, tool := range tools {
					found = found || tool.Name == p.tool
				}
				if !found {
					t.Errorf("tools/list lacks %s: %v", p.tool, tools)
				}
				res, err := c.CallTool(ctx, p.tool, rawArgs(p.args))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(res.Text(), p.want) {
					t.Errorf("%s answered %q, want %q in it", p.tool, res.Text(), p.want)
				}
			})

			t.Run("supervised restart", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				sc, err := supervisor.Connect(ctx, sn.HTTP(url),
					supervisor.WithBackoff(supervisor.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2}),
					supervisor.WithIntensity(1000, time.Minute)) // node takes a while to start again
				if err != nil {
					t.Fatal(err)
				}
				defer sc.Close()
				if _, err := sc.CallTool(ctx, p.tool, rawArgs(p.args)); err != nil {
					t.Fatal(err)
				}
				restart() // the stream ends with the process; a new one answers on the same port
				testutil.Eventually(t, func() bool { return sc.Restarts() >= 1 }, 30*time.Second, "the supervisor did not connect again")
				res, err := sc.CallTool(ctx, p.tool, rawArgs(p.args))
				if err != nil {
					t.Fatalf("the call after the restart: %v", err)
				}
				if !strings.Contains(res.Text(), p.want) {
					t.Errorf("%s answered %q after the restart", p.tool, res.Text())
				}
			})

			t.Run("--url", func(t *testing.T) {
				r := snodo(t, "tools", "--url", url).want(t, 0)
				if !strings.Contains(r.stdout, p.tool) {
					t.Errorf("tools --url:\n%s", r.stdout)
				}
				r = snodo(t, "call", p.tool, p.args, "--url", url).want(t, 0)
				if !strings.Contains(r.stdout, p.want) {
					t.Errorf("call --url:\n%s", r.stdout)
				}
			})

			t.Run("type sse", func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "mcp.json")
				if err := os.WriteFile(path, []byte(`{"mcpServers": {"old": {"type": "sse", "url": "`+url+`"}}}`), 0o600); err != nil {
					t.Fatal(err)
				}
				r := snodo(t, "--config", path, "--server", "old", "tools").want(t, 0)
				if !strings.Contains(r.stdout, p.tool) {
					t.Errorf("--server old tools:\n%s", r.stdout)
				}
				r = snodo(t, "--config", path, "--server", "old", "call", p.tool, p.args).want(t, 0)
				if !strings.Contains(r.stdout, p.want) {
					t.Errorf("--server old call:\n%s", r.stdout)
				}
			})
		})
	}
}

// rawArgs is a call's JSON arguments as a value CallTool takes.
type rawArgs string

func (a rawArgs) MarshalJSON() ([]byte, error) { return []byte(a), nil }
