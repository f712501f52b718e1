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
			args := against(t, append([]string{"--verbose", "--quiet"}, call...))
			cmd := exec.Command(snodoBin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			serverPath := testutil.ServerPath(t)
			var procs []int
			testutil.Eventually(t, func() bool { // until the child has exec'd the server
				procs = descendants(cmd.Process.Pid)
				return len(procs) == 1 && sameFile("/proc/"+strconv.Itoa(procs[0])+"/exe", serverPath)
			}, 10*time.Second, "the server did not start")
			server := procs[0]
			if pp := testutil.Parents()[server]; pp != cmd.Process.Pid {
				t.Errorf("the server %d is a child of %d, want the CLI %d", server, pp, cmd.Process.Pid)
			}
			time.Sleep(500 * time.Millisecond) // let the request reach the server
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("snodo did not exit within 10 s of SIGINT; stderr:\n%s", stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130; stderr:\n%s", code, stderr.String())
			}
			for _, want := range []string{"snodo: interrupted", `"method":"notifications/cancelled"`} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if !regexp.MustCompile(`(?m)^snodo → .*"method":"notifications/cancelled"`).MatchString(stderr.String()) {
				t.Errorf("stderr does not show notifications/cancelled sent:\n%s", stderr.String())
			}
			testutil.AssertReaped(t, server, 5*time.Second)
		})
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
			args := against(t, []string{"info"}, "-era", "modern", "-silent-discover", "-ignore-eof", "-ignore-sigterm")
			cmd := exec.Command(snodoBin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			var server int
			testutil.Eventually(t, func() bool {
				procs := descendants(cmd.Process.Pid)
				if len(procs) == 1 && sameFile("/proc/"+strconv.Itoa(procs[0])+"/exe", testutil.ServerPath(t)) {
					server = procs[0]
				}
				return server != 0
			}, 10*time.Second, "the server did not start")
			began := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("snodo did not exit within 10 s of %s; stderr:\n%s", name, stderr.String())
			}
			t.Logf("%s while connecting: snodo exited %v later, server stopped", name, time.Since(began).Round(time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130; stderr:\n%s", code, stderr.String())
			}
			testutil.Eventually(t, func() bool { return !running(server) }, 5*time.Second, "the server outlived snodo")
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
		testutil.Eventually(t, func() bool { return !running(pid) }, 5*time.Second, "the server outlived snodo")
	}
}

// running: pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}
