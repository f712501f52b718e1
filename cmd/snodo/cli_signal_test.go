//go:build linux

package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

// descendants returns the PIDs of pid's children, their children, and so
// on, from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:])) // state ppid …
		if len(fields) < 2 {
			continue
		}
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		pp, _ := strconv.Atoi(fields[1])
		parent[p] = pp
	}
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
// cancellation (and adds the relay process to the processes checked).
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
			var procs []int
			testutil.Eventually(t, func() bool {
				procs = descendants(cmd.Process.Pid)
				return len(procs) >= 2 // the relay and the server
			}, 10*time.Second, "the server did not start")
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
			for _, pid := range procs {
				testutil.AssertReaped(t, pid, 5*time.Second)
			}
		})
	}
}
