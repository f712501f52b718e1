//go:build linux

package main_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

// descendants returns the PIDs of pid's children, their children, and so
// on.
func descendants(pid int) []int {
	parent := testutil.Parents()
	var out []int
	frontier := []int{pid}
	for len(frontier) > 0 {
		var next []int
		for p, pp := range parent {
			for _, f := range frontier {
				if pp == f {
					next = append(next, p)
				}
			}
		}
		out = append(out, next...)
		frontier = next
	}
	return out
}

// TestInterruptCancelsAndExits sends SIGINT to the CLI while a request
// runs: the CLI must cancel it on the server, exit 130 and leave no
// process behind. --verbose puts the wire on stderr, which shows the
// cancellation. The server is the CLI's only descendant, a direct child:
// --verbose traces the wire in the CLI itself, with no relay process.
func TestInterruptCancelsAndExits(t *testing.T) {
	for name, call := range map[string][]string{
		"request": {"request", "test/sleep", `{"ms":20000,"honorCancel":true}`},
		"call":    {"call", "slow", `{"ms":20000}`},
	} {
		t.Run(name, func(t *testing.T) {
			p := startCLI(t, against(t, append([]string{"--verbose", "--quiet"}, call...)))
			server := p.server(t)
			if pp := testutil.Parents()[server]; pp != p.cmd.Process.Pid {
				t.Errorf("the server %d is a child of %d, want the CLI %d", server, pp, p.cmd.Process.Pid)
			}
			time.Sleep(500 * time.Millisecond) // let the request reach the server
			p.signal(t, syscall.SIGINT, "SIGINT")
			if code := p.cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130; stderr:\n%s", code, p.stderr.String())
			}
			for _, want := range []string{"snodo: interrupted", `"method":"notifications/cancelled"`} {
				if !strings.Contains(p.stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
				}
			}
			if !regexp.MustCompile(`(?m)^snodo → .*"method":"notifications/cancelled"`).MatchString(p.stderr.String()) {
				t.Errorf("stderr does not show notifications/cancelled sent:\n%s", p.stderr.String())
			}
			testutil.AssertReaped(t, server, 5*time.Second)
		})
	}
}

// snodoProc is a snodo process a test signals.
type snodoProc struct {
	cmd    *exec.Cmd
	stderr testutil.Buffer // safe to read while snodo runs
	done   chan struct{}
}

// startCLI starts snodo with args.
func startCLI(t *testing.T, args []string) *snodoProc {
	t.Helper()
	c := &snodoProc{cmd: exec.Command(snodoBin, args...), done: make(chan struct{})}
	c.cmd.Stderr = &c.stderr
	c.cmd.WaitDelay = 5 * time.Second // a server left behind keeps stderr open
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	return c
}

// server waits until the CLI's only descendant is the test server (the
// child has exec'd it) and returns its PID.
func (c *snodoProc) server(t *testing.T) int {
	t.Helper()
	var procs []int
	testutil.Eventually(t, func() bool {
		procs = descendants(c.cmd.Process.Pid)
		return len(procs) == 1 && sameFile("/proc/"+strconv.Itoa(procs[0])+"/exe", testutil.ServerPath(t))
	}, 10*time.Second, "the server did not start")
	return procs[0]
}

// signal sends sig (called name) and waits up to 10 s for snodo to exit.
func (c *snodoProc) signal(t *testing.T, sig syscall.Signal, name string) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("snodo did not exit within 10 s of %s; stderr:\n%s", name, c.stderr.String())
	}
}

// sameFile reports whether two paths name the same file (following
// symbolic links, such as /proc/PID/exe).
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// SIGINT or SIGTERM while connecting to a server that answers nothing
// and ignores EOF and SIGTERM: snodo gives up on it, stops its process
// group and exits 130, leaving nothing running.
func TestSignalWhileConnectingLeavesNothing(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM} {
		t.Run(name, func(t *testing.T) {
			p := startCLI(t, against(t, []string{"info"}, "-era", "modern", "-silent-discover", "-ignore-eof", "-ignore-sigterm"))
			server := p.server(t)
			began := time.Now()
			p.signal(t, sig, name)
			t.Logf("%s while connecting: snodo exited %v later, server stopped", name, time.Since(began).Round(time.Millisecond))
			if code := p.cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130; stderr:\n%s", code, p.stderr.String())
			}
			testutil.Eventually(t, func() bool { return !testutil.Running(server) }, 5*time.Second, "the server outlived snodo")
		})
	}
}

// snodo … | head -c1: the reader of stdout goes away mid-answer. snodo
// must not die of SIGPIPE but close the connection (the server exits at
// EOF) and exit 141 quietly.
func TestStdoutClosedByItsReaderClosesTheConnection(t *testing.T) {
	big := `{"pad":"` + strings.Repeat("x", 100<<10) + `"}`
	args := against(t, []string{"request", "test/echo", big})
	cmd := exec.Command(snodoBin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var servers []int
	one := make([]byte, 1)
	if _, err := stdout.Read(one); err != nil { // head -c1
		t.Fatal(err)
	}
	servers = descendants(cmd.Process.Pid)
	stdout.Close()
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("snodo died of signal %v; stderr:\n%s", ws.Signal(), stderr.String())
	}
	if code := ws.ExitStatus(); code != 141 {
		t.Errorf("exit status %d, want 141; stderr:\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("stderr is not quiet:\n%s", stderr.String())
	}
	for _, pid := range servers {
		testutil.Eventually(t, func() bool { return !testutil.Running(pid) }, 5*time.Second, "the server outlived snodo")
	}
}
