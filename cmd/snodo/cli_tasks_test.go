package main_test

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

// A tool that runs as a task just works, its status on the progress line.
func TestCallTaskShowsItsStatus(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			r := snodo(t, against(t, []string{"call", "research", `{"topic":"go","ms":400,"pollMs":100}`}, "-tasks", "-era", era)...).want(t, 0)
			if r.stdout != "Report on go\n" {
				t.Fatalf("stdout %q, want the report", r.stdout)
			}
			for _, want := range []string{"snodo: task working", "snodo: task completed"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}
}

// A -32042 prints the URL to open.
func TestCallURLElicitationPrintsTheURL(t *testing.T) {
	r := snodo(t, against(t, []string{"call", "url", `{"id":"x"}`}, "-era", "legacy")...).want(t, 1)
	r.oneErrorLine(t, "open https://example.com/auth/x (Sign in to Example.)", "-32042")
}

// Ctrl-C during a task cancels the task on the server.
func TestInterruptCancelsTheTask(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			p := startCLI(t, against(t, []string{"--verbose", "--quiet", "call", "research", `{"ms":60000,"pollMs":100}`}, "-tasks", "-era", era))
			server := p.server(t)
			testutil.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), `"method":"tasks/get"`) },
				10*time.Second, "the task was not polled")
			p.signal(t, syscall.SIGINT, "SIGINT")
			if code := p.cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130; stderr:\n%s", code, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), "snodo: interrupted; the task was cancelled on the server") {
				t.Errorf("stderr:\n%s", p.stderr.String())
			}
			if !regexp.MustCompile(`(?m)^snodo → .*"method":"tasks/cancel"`).MatchString(p.stderr.String()) {
				t.Errorf("stderr does not show tasks/cancel sent:\n%s", p.stderr.String())
			}
			testutil.AssertReaped(t, server, 5*time.Second)
		})
	}
}
