package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

// Tests with hosts as separate OS processes: the snodo binary's `node`
// command, built once per test run (with -race when the tests are).

// raceBuild is set by race_test.go under -race.
var raceBuild bool

var snodoBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// snodoBin builds ./cmd/snodo once and returns the binary's path.
func snodoBin(t *testing.T) string {
	t.Helper()
	snodoBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "snodo-remote-test-")
		if err != nil {
			snodoBuild.err = err
			return
		}
		snodoBuild.dir = dir
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		bin := filepath.Join(dir, "snodo")
		args := []string{"build", "-o", bin}
		if raceBuild {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/snodo")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			snodoBuild.err = fmt.Errorf("building snodo: %v\n%s", err, out)
			return
		}
		snodoBuild.path = bin
	})
	if snodoBuild.err != nil {
		t.Fatal(snodoBuild.err)
	}
	return snodoBuild.path
}

// removeSnodoBuild runs after the tests (TestMain).
func removeSnodoBuild() {
	if snodoBuild.dir != "" {
		_ = os.RemoveAll(snodoBuild.dir)
	}
}

// node is one `snodo node` process.
type node struct {
	t       *testing.T
	cmd     *exec.Cmd
	stderr  *testutil.Buffer
	waited  chan struct{}
	exitErr error
}

// writeConfig writes an mcpServers file serving the test server (with
// flags) as name, and returns its path.
func writeConfig(t *testing.T, name string, flags ...string) string {
	t.Helper()
	doc := map[string]any{"mcpServers": map[string]any{
		name: map[string]any{"command": testutil.ServerPath(t), "args": flags},
	}}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "servers.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// startNode runs `snodo node --config config --nats url` with args and
// returns once it serves (within 60 s).
func startNode(t *testing.T, url, config string, args ...string) *node {
	t.Helper()
	return startNodeEnv(t, nil, url, config, args...)
}

// startNodeEnv is startNode with extra environment variables.
func startNodeEnv(t *testing.T, env []string, url, config string, args ...string) *node {
	t.Helper()
	bin := snodoBin(t)
	cmd := exec.Command(bin, append([]string{"node", "--config", config, "--nats", url}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	n := &node{t: t, cmd: cmd, stderr: &testutil.Buffer{}, waited: make(chan struct{})}
	cmd.Stderr = n.stderr
	require.NoError(t, cmd.Start())
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "serving ") {
				ready <- nil
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		ready <- fmt.Errorf("the node's stdout closed before it served")
	}()
	go func() { n.exitErr = cmd.Wait(); close(n.waited) }()
	t.Cleanup(n.stop)
	select {
	case err := <-ready:
		require.NoError(t, err, "node stderr:\n%s", n.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the node did not serve within 60 s; stderr:\n%s", n.stderr.String())
	}
	return n
}

// hostID is the node's host id, from its "serving" line on stderr.
func (n *node) hostID() string {
	s := n.stderr.String()
	i := strings.Index(s, "(host ")
	if i < 0 {
		return ""
	}
	id, _, _ := strings.Cut(s[i+len("(host "):], ")")
	return id
}

// pid is the node's process id.
func (n *node) pid() int { return n.cmd.Process.Pid }

// descendants are the node's child processes (its MCP servers).
func (n *node) descendants() []int {
	var out []int
	for pid, ppid := range testutil.Parents() {
		if ppid == n.pid() {
			out = append(out, pid)
		}
	}
	return out
}

// signal sends sig and waits (at most 60 s) for the node to exit.
func (n *node) signal(sig syscall.Signal) error {
	_ = n.cmd.Process.Signal(sig)
	select {
	case <-n.waited:
		return n.exitErr
	case <-time.After(60 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.waited
		n.t.Errorf("node %d did not exit within 60 s of %s; stderr:\n%s", n.pid(), sig, n.stderr.String())
		return n.exitErr
	}
}

// stop ends the node if it still runs.
func (n *node) stop() {
	select {
	case <-n.waited:
	default:
		_ = n.signal(syscall.SIGTERM)
	}
}

// journal reads the test servers' -journal file.
func journal(t *testing.T, path string) []journalLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []journalLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var l journalLine
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		out = append(out, l)
	}
	return out
}

type journalLine struct {
	PID    int             `json:"pid"`
	Kind   string          `json:"kind"`
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
}

// count counts the lines of kind and method.
func count(lines []journalLine, kind, method string) int {
	n := 0
	for _, l := range lines {
		if l.Kind == kind && l.Method == method {
			n++
		}
	}
	return n
}

func bg() context.Context { return context.Background() }
