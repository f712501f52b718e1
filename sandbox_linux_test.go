package snodo

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/snodo/snodo/internal/telemetry"
	"github.com/snodo/snodo/test/testutil"
)

// The sandbox's tests run the test server inside each limit and call the
// tool that breaks it (test/testserver/sandbox.go). A limit this machine
// cannot set up skips its test with the reason, which go test -v prints.

// dialSandboxed starts the test server inside sb, or skips the test when
// this machine cannot set sb up.
func dialSandboxed(t *testing.T, sb Sandbox, opts ...Option) *Client {
	t.Helper()
	command, args := testutil.Server(t)
	c, err := Connect(t.Context(), command, args, append([]Option{WithSandbox(sb)}, opts...)...)
	var se *SandboxError
	if errors.As(err, &se) && se.Err != nil {
		t.Skipf("this machine cannot set up the sandbox: %v", err)
	}
	require.NoError(t, err)
	testutil.CloseAtEnd(t, c)
	return c
}

// usage is what the stopped server used, from the wait status its stop
// reason wraps: peak resident memory in bytes and CPU time.
func usage(t *testing.T, reason error) (maxRSS int64, cpu time.Duration) {
	t.Helper()
	var ee *exec.ExitError
	require.True(t, errors.As(reason, &ee), "the stop reason wraps the server's wait status: %v", reason)
	ru := ee.SysUsage().(*syscall.Rusage)
	return ru.Maxrss << 10, ee.UserTime() + ee.SystemTime()
}

// requireStopped checks that err (a call's) and the client's Err both
// wrap a *SandboxError for limit, and returns it.
func requireStopped(t *testing.T, c *Client, err error, limit string) *SandboxError {
	t.Helper()
	var se *SandboxError
	require.ErrorAs(t, err, &se, "the waiting call's -32000 wraps the sandbox error")
	assert.Equal(t, limit, se.Limit)
	assert.Nil(t, se.Err, "a broken limit, not a failed set-up")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeConnectionClosed, e.Code)
	testutil.Receive(t, c.Done(), 10*time.Second, "the stopped client's Done")
	require.ErrorAs(t, c.Err(), &se)
	assert.Equal(t, limit, se.Limit)
	assert.Contains(t, c.Err().Error(), "sandbox: server stopped at its")
	return se
}

// ownCgroups lists the cgroups this process made that still exist.
func ownCgroups() []string {
	var left []string
	for _, pattern := range []string{"/sys/fs/cgroup/pids/snodo-%d-*", "/sys/fs/cgroup/memory/*/*/snodo-%d-*", "/sys/fs/cgroup/memory/snodo-%d-*"} {
		m, _ := filepath.Glob(strings.Replace(pattern, "%d", strconv.Itoa(os.Getpid()), 1))
		left = append(left, m...)
	}
	return left
}

func TestSandboxMemoryStopsTheServer(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	const limit = 64 << 20
	c := dialSandboxed(t, Sandbox{MemoryBytes: limit}, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	res, err := c.CallTool(t.Context(), "alloc", map[string]int{"mb": 16})
	require.NoError(t, err, "an allocation under the limit is fine")
	assert.Equal(t, "allocated 16 MiB", res.Text())

	_, err = c.CallTool(t.Context(), "alloc", map[string]int{"mb": 256})
	se := requireStopped(t, c, err, "memory")
	assert.Equal(t, "64 MiB", se.Value)
	if se.Mechanism != "cgroup v1 memory controller" {
		t.Skipf("memory was limited by %s, not a cgroup: the OOM checks below need one", se.Mechanism)
	}
	assert.Contains(t, err.Error(), "memory limit of 64 MiB (cgroup v1 memory controller")
	// What the host lost: the group's peak charge, which the kernel lets
	// pass the limit by the few pages a task it is killing faults in as
	// it dies (the server's rusage cannot say it: Linux carries the
	// host's own high-water mark, from the memory the server was forked
	// from, across its exec).
	assert.Positive(t, se.Peak, "the group's peak is read as the server is reaped")
	assert.LessOrEqual(t, se.Peak, int64(limit)+8<<20, "the server's peak memory stays within the limit (and slack)")
	testutil.Eventually(t, func() bool { return len(ownCgroups()) == 0 }, 5*time.Second, "cgroups removed after the reap")

	stops := testutil.Metrics(t, reader)[telemetry.MetricSandboxStops]
	require.NotNil(t, stops, "sandbox stops are counted")
	sum := stops.(metricdata.Sum[int64])
	require.Len(t, sum.DataPoints, 1)
	limitAttr, _ := sum.DataPoints[0].Attributes.Value(telemetry.AttrSandboxLimit)
	assert.Equal(t, "memory", limitAttr.AsString())
	assert.Equal(t, int64(1), sum.DataPoints[0].Value)
}

func TestSandboxCPUStopsTheServer(t *testing.T) {
	c := dialSandboxed(t, Sandbox{CPUTime: time.Second})
	_, err := c.CallTool(t.Context(), "spin", map[string]int{"ms": 0})
	se := requireStopped(t, c, err, "cpu")
	assert.Equal(t, "RLIMIT_CPU", se.Mechanism)
	_, cpu := usage(t, c.Err())
	assert.Less(t, cpu, 1500*time.Millisecond, "the server used no more than its second (and the kernel's tick) of CPU")
}

// startedOf reads "started K of N" (or "opened …") from a tool's text.
func startedOf(t *testing.T, text string) int {
	t.Helper()
	m := regexp.MustCompile(`^\w+ (\d+) of \d+`).FindStringSubmatch(text)
	require.NotNil(t, m, "tool text %q", text)
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestSandboxProcessesFailForkInsideTheServer(t *testing.T) {
	const limit = 24
	c := dialSandboxed(t, Sandbox{MaxProcesses: limit})
	res, err := c.CallTool(t.Context(), "fork", map[string]int{"n": 40})
	require.NoError(t, err, "the server is not stopped for it")
	require.True(t, res.IsError, "fork fails inside the server: %s", res.Text())
	assert.Contains(t, res.Text(), "resource temporarily unavailable")
	started := startedOf(t, res.Text())
	assert.Greater(t, started, 0)
	assert.Less(t, started, limit, "its threads count too: fewer children than the limit")
	res, err = c.CallTool(t.Context(), "echo", map[string]string{"message": "still here"})
	require.NoError(t, err)
	assert.Equal(t, "still here", res.Text(), "the server stays usable")
	res, err = c.CallTool(t.Context(), "fork", map[string]int{"n": 3})
	require.NoError(t, err)
	assert.False(t, res.IsError, "the children it killed freed their places: %s", res.Text())
}

func TestSandboxFilesFailOpenInsideTheServer(t *testing.T) {
	c := dialSandboxed(t, Sandbox{MaxOpenFiles: 64})
	res, err := c.CallTool(t.Context(), "openfiles", map[string]int{"n": 100})
	require.NoError(t, err)
	require.True(t, res.IsError, "open fails inside the server: %s", res.Text())
	assert.Contains(t, res.Text(), "too many open files")
	assert.Less(t, startedOf(t, res.Text()), 64)
	res, err = c.CallTool(t.Context(), "openfiles", map[string]int{"n": 10})
	require.NoError(t, err)
	assert.Equal(t, "opened 10 of 10", res.Text(), "the server stays usable")
}

func TestSandboxFilesystemAllowsOnlyItsPaths(t *testing.T) {
	ro, rw, outside := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{ro, outside} {
		require.NoError(t, os.WriteFile(filepath.Join(d, "f"), []byte("in "+filepath.Base(d)), 0o600))
	}
	c := dialSandboxed(t, Sandbox{ReadOnly: []string{ro}, ReadWrite: []string{rw}})
	call := func(tool string, args map[string]string) *CallToolResult {
		t.Helper()
		res, err := c.CallTool(t.Context(), tool, args)
		require.NoError(t, err)
		return res
	}
	res := call("read", map[string]string{"path": filepath.Join(ro, "f")})
	assert.False(t, res.IsError, res.Text())
	res = call("read", map[string]string{"path": filepath.Join(outside, "f")})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text(), "permission denied")
	res = call("read", map[string]string{"path": "/etc/hostname"})
	assert.True(t, res.IsError, "nothing outside its paths: %s", res.Text())

	res = call("write", map[string]string{"path": filepath.Join(rw, "new"), "text": "written"})
	assert.False(t, res.IsError, res.Text())
	got, err := os.ReadFile(filepath.Join(rw, "new"))
	require.NoError(t, err)
	assert.Equal(t, "written", string(got))
	for _, p := range []string{filepath.Join(ro, "new"), filepath.Join(outside, "new")} {
		res = call("write", map[string]string{"path": p, "text": "no"})
		assert.True(t, res.IsError, p)
		assert.NoFileExists(t, p)
	}
	res = call("fork", map[string]string{}) // "sleep" is not among its paths either
	assert.False(t, res.IsError, "fork 0 starts nothing: %s", res.Text())
	assert.Equal(t, "still here", call("echo", map[string]string{"message": "still here"}).Text())
}

func TestSandboxNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	addr := map[string]string{"address": ln.Addr().String()}

	open := dialTest(t, nil)
	res, err := open.CallTool(t.Context(), "connect", addr)
	require.NoError(t, err)
	require.False(t, res.IsError, "without a sandbox the server reaches the host: %s", res.Text())

	c := dialSandboxed(t, Sandbox{NoNetwork: true})
	res, err = c.CallTool(t.Context(), "connect", addr)
	require.NoError(t, err)
	assert.True(t, res.IsError, "no network: %s", res.Text())
	assert.Contains(t, res.Text(), "network is unreachable")
	assert.Equal(t, "ok", mustEcho(t, c, "ok"), "the server stays usable")
}

func mustEcho(t *testing.T, c *Client, msg string) string {
	t.Helper()
	res, err := c.CallTool(t.Context(), "echo", map[string]string{"message": msg})
	require.NoError(t, err)
	return res.Text()
}

// TestSandboxLeavesTheHostAsItWas: a full sandbox changes nothing of the
// host process (its rlimits; no thread left under no_new_privs or
// Landlock), the seed's rules hold (own process group, Close closes
// stdin and the server exits 0, reaped), and what the server started is
// stopped with it, its cgroups removed.
func TestSandboxLeavesTheHostAsItWas(t *testing.T) {
	resources := []int{syscall.RLIMIT_AS, syscall.RLIMIT_CPU, syscall.RLIMIT_NOFILE, 6 /* RLIMIT_NPROC */}
	before := make([]syscall.Rlimit, len(resources))
	for i, r := range resources {
		require.NoError(t, syscall.Getrlimit(r, &before[i]))
	}
	var stderr testutil.Buffer
	command, args := testutil.Server(t, "-grandchild")
	var logs testutil.LogRecorder
	c, err := Connect(t.Context(), command, args, WithStderr(&stderr), WithLogger(logs.Logger()), WithSandbox(Sandbox{
		MemoryBytes: 256 << 20, CPUTime: time.Minute, MaxProcesses: 64, MaxOpenFiles: 256,
		ReadOnly: []string{"/usr", "/bin"}, ReadWrite: []string{t.TempDir(), "/dev/null"}, NoNetwork: true,
	}))
	var se *SandboxError
	if errors.As(err, &se) && se.Err != nil {
		t.Skipf("this machine cannot set up the sandbox: %v", err)
	}
	require.NoError(t, err)
	pid := c.ServerPID()
	assert.Equal(t, "x", mustEcho(t, c, "x"))
	assert.True(t, logs.Has("snodo: server started in its sandbox"), "the start is logged: %q", logs.Messages())
	assert.True(t, logs.Has("files 256 by RLIMIT_NOFILE, paths by Landlock, network by network namespace"), "with how each limit is enforced: %q", logs.Messages())

	for i, r := range resources {
		var now syscall.Rlimit
		require.NoError(t, syscall.Getrlimit(r, &now))
		assert.Equal(t, before[i], now, "the host's rlimit %d", r)
	}
	testutil.Eventually(t, func() bool { return noThreadRestricted(t) }, 5*time.Second, "the launching thread was discarded")
	_, err = os.ReadFile("/etc/hostname")
	require.NoError(t, err, "the host still opens what it likes")

	pgid, err := syscall.Getpgid(pid)
	require.NoError(t, err)
	assert.Equal(t, pid, pgid, "the server leads its own process group")
	testutil.Eventually(t, func() bool { return strings.Contains(stderr.String(), "grandchild-pid=") }, 5*time.Second, "the grandchild started")
	_, rest, _ := strings.Cut(stderr.String(), "grandchild-pid=")
	gpid, err := strconv.Atoi(strings.Fields(rest)[0])
	require.NoError(t, err)

	require.NoError(t, c.Close())
	testutil.Receive(t, c.Done(), 10*time.Second, "Done after Close")
	assert.ErrorIs(t, c.Err(), ErrClosed, "Close closed stdin and the server exited")
	testutil.AssertReaped(t, pid, 5*time.Second)
	testutil.Eventually(t, func() bool { return !testutil.Running(gpid) }, 5*time.Second, "what the server started is stopped with it")
	testutil.Eventually(t, func() bool { return len(ownCgroups()) == 0 }, 5*time.Second, "cgroups removed after the reap")
}

// noThreadRestricted reports whether no thread of this process has
// no_new_privs (the launching thread had it, with its Landlock domain).
func noThreadRestricted(t *testing.T) bool {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	require.NoError(t, err)
	for _, s := range tasks {
		b, err := os.ReadFile(s)
		if err != nil {
			continue // the thread ended meanwhile
		}
		if strings.Contains(string(b), "NoNewPrivs:\t1") {
			return false
		}
	}
	return true
}

func TestSandboxRefusedNeverStartsTheServer(t *testing.T) {
	command, args := testutil.Server(t)
	_, err := Connect(t.Context(), command, args, WithSandbox(Sandbox{ReadOnly: []string{"relative/dir"}}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is relative: give an absolute path")

	_, err = Connect(t.Context(), command, args, WithSandbox(Sandbox{MemoryBytes: -1}))
	assert.ErrorContains(t, err, "MemoryBytes is -1")

	_, err = ConnectHTTP(t.Context(), "http://127.0.0.1:1/mcp", WithSandbox(Sandbox{NoNetwork: true}))
	assert.ErrorContains(t, err, "WithSandbox applies to a server snodo starts as a command")

	before := len(testutil.ChildPIDs())
	_, err = Connect(t.Context(), command, args, WithSandbox(Sandbox{ReadOnly: []string{"/no/such/dir"}}))
	var se *SandboxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "filesystem", se.Limit)
	assert.NotNil(t, se.Err)
	assert.Contains(t, err.Error(), "/no/such/dir")
	assert.Contains(t, err.Error(), "never started without the sandbox")
	assert.Len(t, testutil.ChildPIDs(), before, "nothing was started")
	assert.Empty(t, ownCgroups())
}
