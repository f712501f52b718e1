//go:build linux

package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// The user's machine: servers launched through wrappers, forced
// shutdown of their process group, the environment they inherit, and
// arguments that never meet a shell.

var subreaper sync.Once

// becomeSubreaper makes this test process adopt its orphaned descendants,
// as init would. On this machine PID 1 does not reap orphans, so without
// it a server whose wrapper died first would stay a zombie for ever; the
// tests reap such orphans by pid (reapOrphan), never with a wait for any
// child, which would steal os/exec's own children.
func becomeSubreaper(t *testing.T) {
	t.Helper()
	subreaper.Do(func() {
		const prSetChildSubreaper = 36
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
			t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
		}
	})
}

// reapOrphan waits until pid has exited and is reaped: by its own parent,
// or by this process once it has been adopted.
func reapOrphan(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, func() bool {
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid {
			return true
		} else if err != nil && !errors.Is(err, syscall.ECHILD) {
			t.Errorf("wait4(%d): %v", pid, err)
			return true
		}
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return os.IsNotExist(err)
	}, within, "process "+strconv.Itoa(pid)+" reaped")
	testutil.AssertReaped(t, pid, time.Second)
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := 0
	for i < len(b) && b[i] != ')' {
		i++
	}
	return i+2 < len(b) && b[i+2] != 'Z'
}

// tree is a server started through testdata/wrapper.sh: the wrapper (our
// child), the real server (its child) and the server's grandchild, all
// of which ignore EOF or outlive it: the server ignores EOF and SIGTERM,
// the grandchild holds the server's stdout and stderr.
type tree struct {
	c                           *snodo.Client
	wrapper, server, grandchild int
	fds                         int
}

func startTree(t *testing.T, opts ...snodo.Option) *tree {
	t.Helper()
	becomeSubreaper(t)
	wrapper, err := filepath.Abs("testdata/wrapper.sh")
	if err != nil {
		t.Fatal(err)
	}
	server := testutil.ServerPath(t)
	tr := &tree{fds: testutil.OpenFDs()}
	stderr := &testutil.Buffer{}
	opts = append(opts, snodo.WithStderr(stderr))
	tr.c, err = snodo.Connect(context.Background(), wrapper,
		[]string{server, "-grandchild", "-grandchild-stdio", "-ignore-eof", "-ignore-sigterm"}, opts...)
	if err != nil {
		t.Fatalf("connect through the wrapper: %v", err)
	}
	tr.wrapper = tr.c.ServerPID()
	res, err := tr.c.Request(context.Background(), "test/pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ PID int }
	if err := json.Unmarshal(res, &p); err != nil {
		t.Fatal(err)
	}
	tr.server = p.PID
	re := regexp.MustCompile(`grandchild-pid=(\d+)`)
	testutil.Eventually(t, func() bool { return re.MatchString(stderr.String()) }, 5*time.Second, "grandchild started")
	tr.grandchild, _ = strconv.Atoi(re.FindStringSubmatch(stderr.String())[1])
	if tr.server == tr.wrapper || tr.grandchild == 0 {
		t.Fatalf("pids: wrapper %d, server %d, grandchild %d", tr.wrapper, tr.server, tr.grandchild)
	}
	t.Cleanup(func() { // a failed test must leave nothing behind
		for _, pid := range []int{tr.grandchild, tr.server, tr.wrapper} {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return tr
}

func TestShutdownGraceKillsTheWholeProcessGroup(t *testing.T) {
	const grace = 200 * time.Millisecond
	tr := startTree(t, snodo.WithShutdownGrace(grace))
	began := time.Now()
	if err := tr.c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not done 10 s after Close with a shutdown grace")
	}
	t.Logf("wrapper, server and grandchild gone %v after Close (grace %v: SIGTERM, then SIGKILL)", time.Since(began).Round(time.Millisecond), grace)
	if !errors.Is(tr.c.Err(), snodo.ErrClosed) {
		t.Errorf("Err() = %v", tr.c.Err())
	}
	reapOrphan(t, tr.grandchild, 5*time.Second) // SIGTERM; its parent, the server, reaps it
	reapOrphan(t, tr.server, 5*time.Second)     // ignores SIGTERM: SIGKILL; adopted once the wrapper died
	testutil.AssertReaped(t, tr.wrapper, 5*time.Second)
	testutil.AssertFDsBack(t, tr.fds, 10*time.Second)
	testutil.VerifyNone(t)
}

func TestWithoutShutdownGraceCloseSignalsNothing(t *testing.T) {
	tr := startTree(t)
	if err := tr.c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.c.Done():
		t.Fatal("Close stopped a server that ignores EOF without WithShutdownGrace")
	case <-time.After(500 * time.Millisecond):
	}
	for name, pid := range map[string]int{"wrapper": tr.wrapper, "server": tr.server, "grandchild": tr.grandchild} {
		if !alive(pid) {
			t.Errorf("%s %d was stopped by Close", name, pid)
		}
	}
	// The user's own clean-up. Without the option the server has no
	// process group of its own (it shares ours), so each is killed by pid:
	// the server reaps the grandchild, the wrapper the server, and the
	// wrapper then exits with the server's status.
	for _, pid := range []int{tr.grandchild, tr.server} {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-tr.c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not done after the server was killed")
	}
	if !errors.Is(tr.c.Err(), snodo.ErrClosed) {
		t.Errorf("Err() = %v", tr.c.Err())
	}
	reapOrphan(t, tr.grandchild, 5*time.Second)
	reapOrphan(t, tr.server, 5*time.Second)
	testutil.AssertReaped(t, tr.wrapper, 5*time.Second)
	testutil.AssertFDsBack(t, tr.fds, 10*time.Second)
	testutil.VerifyNone(t)
}

type envAnswer struct {
	Value string `json:"value"`
	Set   bool   `json:"set"`
}

func serverEnv(t *testing.T, c *snodo.Client, name string) envAnswer {
	t.Helper()
	res, err := c.Request(context.Background(), "test/env", map[string]string{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	var a envAnswer
	if err := json.Unmarshal(res, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCleanEnvKeepsSecretsFromTheServer(t *testing.T) {
	t.Setenv("SNODO_CHAOS_SECRET", "hunter2")
	t.Setenv("PATH", os.Getenv("PATH")+":/opt/snodo-chaos/bin")
	cmd, args := testutil.Server(t)
	fds := testutil.OpenFDs()
	var pids []int
	connect := func(opts ...snodo.Option) *snodo.Client {
		c, err := snodo.Connect(context.Background(), cmd, args, opts...)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, c.ServerPID())
		t.Cleanup(func() { c.Close() })
		return c
	}

	leaky := connect()
	if got := serverEnv(t, leaky, "SNODO_CHAOS_SECRET"); !got.Set || got.Value != "hunter2" {
		t.Errorf("without WithCleanEnv the server should inherit everything, got %+v", got)
	}

	clean := connect(snodo.WithCleanEnv(), snodo.WithEnv("SNODO_CHAOS_EXTRA", "given"))
	if got := serverEnv(t, clean, "SNODO_CHAOS_SECRET"); got.Set {
		t.Errorf("the secret reached the server through WithCleanEnv: %+v", got)
	}
	if got := serverEnv(t, clean, "PATH"); !got.Set || got.Value != os.Getenv("PATH") {
		t.Errorf("PATH = %+v, want the client's %q", got, os.Getenv("PATH"))
	}
	if got := serverEnv(t, clean, "SNODO_CHAOS_EXTRA"); got.Value != "given" {
		t.Errorf("WithEnv extra = %+v", got)
	}

	custom := connect(snodo.WithCleanEnv("SNODO_CHAOS_SECRET"))
	if got := serverEnv(t, custom, "SNODO_CHAOS_SECRET"); got.Value != "hunter2" {
		t.Errorf("an explicitly allowed variable = %+v", got)
	}
	if got := serverEnv(t, custom, "PATH"); got.Set {
		t.Errorf("PATH passed although the allow-list names only SNODO_CHAOS_SECRET: %+v", got)
	}

	for _, c := range []*snodo.Client{leaky, clean, custom} {
		c.Close()
		<-c.Done()
	}
	for _, pid := range pids {
		testutil.AssertReaped(t, pid, 5*time.Second)
	}
	testutil.AssertFDsBack(t, fds, 10*time.Second)
	testutil.VerifyNone(t)
}

func TestArgumentsNeverMeetAShell(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	cmd, args := testutil.Server(t, quickEOF)
	fds := testutil.OpenFDs()
	hostile := []string{"; touch " + marker, "$(touch " + marker + ")", "`touch " + marker + "`", "| touch " + marker, "&& touch pwned", "*"}
	c, err := snodo.Connect(context.Background(), cmd, append(args, hostile...), snodo.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(context.Background(), "test/echo", nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-c.Done()
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("an argument was run by a shell: %s exists", marker)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Errorf("an argument was run by a shell in the server's directory")
	}
	testutil.AssertReaped(t, c.ServerPID(), 5*time.Second)
	testutil.AssertFDsBack(t, fds, 10*time.Second)
	testutil.VerifyNone(t)
}
