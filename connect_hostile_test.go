package snodo

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/test/testutil"
)

// newChildren returns the children of this process that were not in before.
func newChildren(before []int) []int {
	var out []int
	for _, pid := range testutil.ChildPIDs() {
		if !slices.Contains(before, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// requireNoNewChildren checks every server Connect started is gone.
func requireNoNewChildren(t *testing.T, before []int) {
	t.Helper()
	testutil.Eventually(t, func() bool { return len(newChildren(before)) == 0 }, 5*time.Second, "servers left running")
}

// A server that exits before it reads the probe is not started again: its
// side effects (here, a line in a file) happen once.
func TestServerGoneBeforeTheProbeIsStartedOnce(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	before := testutil.ChildPIDs()
	_, err := Connect(t.Context(), "sh", []string{"-c", `echo run >> "$0"; exit 1`, runs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "before it read the server/discover probe")
	assert.ErrorIs(t, err, ErrServerExited)
	assert.Contains(t, err.Error(), "status 1")
	b, rerr := os.ReadFile(runs)
	require.NoError(t, rerr)
	assert.Equal(t, "run\n", string(b), "the server was started more than once")
	requireNoNewChildren(t, before)
}

// A server that closes its stdout on server/discover and ignores stdin
// EOF: the probe fails, the old process is stopped within a bounded time
// (not awaited for ever), and the restart speaks legacy.
func TestConnectNeverHangsOnAServerThatClosesStdoutOnTheProbe(t *testing.T) {
	before := testutil.ChildPIDs()
	command, args := testutil.Server(t, "-close-stdout-on-discover", "-ignore-eof")
	began := time.Now()
	c, err := Connect(context.Background(), command, args, WithShutdownGrace(100*time.Millisecond)) // the second one ignores EOF too
	require.NoError(t, err)
	t.Logf("connected after the restart in %v", time.Since(began).Round(time.Millisecond))
	assert.Less(t, time.Since(began), 10*time.Second)
	assert.True(t, c.mcp.restarted)
	assert.Equal(t, EraLegacy, c.Era())
	require.Len(t, newChildren(before), 1, "the first server is still running")
	require.NoError(t, c.Close())
	<-c.Done()
	requireNoNewChildren(t, before)
}

// A failed Connect leaves nothing running, even a server that ignores
// EOF and SIGTERM: stdin closed, a grace, then its process group stopped
// (its grandchild too).
func TestFailedConnectStopsTheServer(t *testing.T) {
	before := testutil.ChildPIDs()
	command, args := testutil.Server(t, "-era", "modern", "-silent-discover", "-ignore-eof", "-ignore-sigterm", "-grandchild")
	var stderr testutil.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := Connect(ctx, command, args, WithStderr(&stderr))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	took := time.Since(began)
	t.Logf("failed Connect returned %v after its ctx expired, server group stopped", (took - 800*time.Millisecond).Round(time.Millisecond))
	assert.Less(t, took, 5*time.Second)
	requireNoNewChildren(t, before)
	_, rest, ok := strings.Cut(stderr.String(), "grandchild-pid=")
	require.True(t, ok, "stderr: %q", stderr.String())
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return !testutil.Running(pid) }, 5*time.Second, "the grandchild outlived the failed Connect")
}

// Endless pagination stops: at a repeated cursor, and at the page limit
// (an option with a default, named in the error), for every list call, in
// both eras.
func TestEndlessPaginationStops(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			fresh := dialTest(t, []string{"-era", era, "-endless-pages", "fresh"})
			repeat := dialTest(t, []string{"-era", era, "-endless-pages", "repeat"})
			ctx := context.Background()
			lists := map[string]func(c *Client, opts ...RequestOption) error{
				"ListTools": func(c *Client, o ...RequestOption) error { _, err := c.ListTools(ctx, o...); return err },
				"ListResources": func(c *Client, o ...RequestOption) error {
					_, err := c.ListResources(ctx, o...)
					return err
				},
				"ListResourceTemplates": func(c *Client, o ...RequestOption) error {
					_, err := c.ListResourceTemplates(ctx, o...)
					return err
				},
				"ListPrompts": func(c *Client, o ...RequestOption) error { _, err := c.ListPrompts(ctx, o...); return err },
			}
			for name, list := range lists {
				err := list(repeat)
				require.ErrorContains(t, err, "repeated cursor", name)
				err = list(fresh, MaxPages(50))
				require.ErrorContains(t, err, "more than 50 pages", name)
				require.ErrorContains(t, err, "MaxPages", name)
			}
			began := time.Now()
			err := lists["ListTools"](fresh)
			require.ErrorContains(t, err, "more than 1000 pages")
			t.Logf("default bound: stopped after 1000 pages in %v", time.Since(began).Round(time.Millisecond))
		})
	}
}

// Option values that would silently do something else are refused.
func TestEnvOptionsRefuseNamesWithEquals(t *testing.T) {
	command, args := testutil.Server(t)
	for _, opt := range []Option{WithEnv("A=B", "x"), WithoutEnv("PATH=/usr"), WithEnv("", "x"), WithoutEnv("A\x00B"), WithEnv("A", "x\x00y"),
		WithCleanEnv("PATH", "HOME=/root"), WithCleanEnv("")} {
		before := testutil.ChildPIDs()
		_, err := Connect(t.Context(), command, args, opt)
		require.Error(t, err)
		require.Regexp(t, `With(out|Clean)?Env`, err.Error())
		require.Empty(t, newChildren(before), "nothing may be started")
	}
	c := dialTest(t, nil, WithEnv("SNODO_OK", "a=b")) // '=' in a value is fine
	res, err := c.Request(t.Context(), "test/env", map[string]string{"name": "SNODO_OK"})
	require.NoError(t, err)
	require.JSONEq(t, `{"value":"a=b","set":true}`, string(res))
}

// WithMaxLineBytes takes 64 to 1 GiB; past either end it is refused
// with what to pass, before anything starts.
func TestWithMaxLineBytesBounds(t *testing.T) {
	command, args := testutil.Server(t)
	for n, want := range map[int]string{10: "pass at least 64", limits.MaxLineBytesLimit + 1: "pass at most 1073741824", math.MaxInt: "pass at most 1073741824"} {
		before := testutil.ChildPIDs()
		_, err := Connect(t.Context(), command, args, WithMaxLineBytes(n))
		require.ErrorContains(t, err, "WithMaxLineBytes")
		require.ErrorContains(t, err, want)
		require.Empty(t, newChildren(before), "nothing may be started")
	}
	c := dialTest(t, nil, WithMaxLineBytes(limits.MaxLineBytesLimit))
	require.NoError(t, c.Ping(t.Context()))
}

// An owner from another actor system is named as the mistake, before
// anything starts; ConnectTo and Connect refuse nil arguments at once.
func TestOwnerFromAnotherSystemAndNilArguments(t *testing.T) {
	other := snodoactor.NewQuietSystem(nil)
	t.Cleanup(other.Shutdown)
	owner := other.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	command, args := testutil.Server(t)
	before := testutil.ChildPIDs()
	_, err := Connect(t.Context(), command, args, WithOwner(owner))
	require.ErrorContains(t, err, "WithActorSystem")
	require.NotContains(t, err.Error(), "answered neither")
	require.Empty(t, newChildren(before))

	// With the owner's system it works.
	c := dialTest(t, nil, WithOwner(owner), WithActorSystem(other))
	require.NoError(t, c.Ping(t.Context()))

	require.ErrorContains(t, ConnectTo(t.Context(), other, nil, command, args), "nil PID")
	require.ErrorContains(t, ConnectTo(t.Context(), nil, owner, command, args), "nil actor system")
	//lint:ignore SA1012 the point of the test
	require.ErrorContains(t, ConnectTo(nil, other, owner, command, args), "nil context") //nolint:staticcheck
	//lint:ignore SA1012 the point of the test
	_, err = Connect(nil, command, args) //nolint:staticcheck
	require.ErrorContains(t, err, "nil context")

	// A nil Option (one built conditionally and left unset) is named, not
	// a panic.
	var unset Option
	before = testutil.ChildPIDs()
	_, err = Connect(t.Context(), command, args, WithTimeout(time.Second), unset)
	require.ErrorContains(t, err, "option 2 is nil")
	require.Empty(t, newChildren(before))
}

// Kill stops a connected server that ignores EOF and SIGTERM as a failed
// Connect does: stdin closed, then SIGTERM and SIGKILL to its process
// group (grandchild included), and returns once it is reaped.
func TestKillStopsAServerThatIgnoresEOF(t *testing.T) {
	before := testutil.ChildPIDs()
	command, args := testutil.Server(t, "-ignore-eof", "-ignore-sigterm", "-grandchild")
	var stderr testutil.Buffer
	c, err := Connect(t.Context(), command, args, WithStderr(&stderr))
	require.NoError(t, err)
	pid := c.ServerPID()
	began := time.Now()
	c.kill()
	t.Logf("Kill returned after %v", time.Since(began).Round(time.Millisecond))
	testutil.AssertReaped(t, pid, 0)
	testutil.Receive(t, c.Done(), time.Second, "Done after Kill")
	require.ErrorIs(t, c.Err(), ErrClosed)
	requireNoNewChildren(t, before)
	_, rest, ok := strings.Cut(stderr.String(), "grandchild-pid=")
	require.True(t, ok, "stderr: %q", stderr.String())
	gpid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return !testutil.Running(gpid) }, 5*time.Second, "the grandchild outlived Kill")
	c.kill() // again: nothing left to do
}

// A WithDir that is missing or no directory is named as the mistake,
// before anything starts: the server's start failed with "fork/exec
// COMMAND: no such file or directory", blaming a command that exists.
func TestWithDirThatIsNoDirectory(t *testing.T) {
	command, args := testutil.Server(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for path, want := range map[string]string{filepath.Join(dir, "missing"): "no such file or directory", file: "not a directory"} {
		before := testutil.ChildPIDs()
		_, err := Connect(t.Context(), command, args, WithDir(path))
		require.Error(t, err)
		require.Contains(t, err.Error(), "WithDir")
		require.Contains(t, err.Error(), path)
		require.Contains(t, err.Error(), want)
		require.NotContains(t, err.Error(), "fork/exec")
		require.Empty(t, newChildren(before), "nothing may be started")

		// A later WithDir replaces it, unchecked: a servers file's "cwd"
		// replaced by the program's (or by snodo --dir).
		c, err := Connect(t.Context(), command, args, WithDir(path), WithDir(dir))
		require.NoError(t, err)
		require.NoError(t, c.Close())
		<-c.Done()
	}
}
