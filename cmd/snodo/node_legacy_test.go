//go:build linux

package main_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	mcp "github.com/snodo/snodo"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/test/testutil"
)

// A legacy-era caller of a node: the node's legacy-era connection starts
// with its first call, the server's mid-call elicitation is answered by
// the caller's handler (not by the node), and once the node is drained
// neither server is left running, even one that ignores EOF.
func TestNodeLegacyCallerAndNoServerBehind(t *testing.T) {
	config := nodeConfig(t, map[string][]string{"ts": {"-ignore-eof"}})
	p, _, url := startServingNode(t, config, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer := func(context.Context, *mcp.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	c, err := remote.Dial(ctx, url, "ts", remote.WithConnectOptions(mcp.WithEra(mcp.EraLegacy), mcp.WithServerRequestHandler(answer)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "ask", nil)
	_ = c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "Hello, Ada!" {
		t.Fatalf("ask: %q, want the caller's answer", res.Text())
	}
	var servers []int
	testutil.Eventually(t, func() bool { servers = descendants(p.cmd.Process.Pid); return len(servers) == 2 }, 10*time.Second,
		"the node's server and its legacy-era twin")
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
