package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests start sh, not an MCP server, so that they can run as any
// user (the root package's tests cover each limit end to end as root):
//
//	go test -c -o /tmp/sandbox.test ./internal/sandbox
//	setpriv --reuid 65534 --regid 65534 --clear-groups /tmp/sandbox.test -test.v

// run starts sh -c script inside spec and returns its output and Exit's
// error, or skips when this machine cannot set spec up.
func run(t *testing.T, spec Spec, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	h, err := Start(cmd, &spec)
	var se *Error
	if errors.As(err, &se) && se.Err != nil {
		t.Skipf("cannot set up %s here: %v", spec.String(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	err = h.Exit(cmd.Wait())
	return out.String(), err
}

func TestLimitsAsThisUserGetsThem(t *testing.T) {
	t.Logf("uid %d", os.Geteuid())
	out, err := run(t, Spec{MaxOpenFiles: 33, MaxProcesses: 50, MemoryBytes: 1 << 30, CPUTime: 3 * time.Second}, "ulimit -n; ulimit -Hn; ulimit -t; ulimit -v; cat /proc/self/cgroup")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("inside: %q", out)
	lines := strings.Fields(out)
	if lines[0] != "33" || lines[1] != "33" || lines[2] != "3" {
		t.Errorf("open files soft/hard and CPU seconds: %q", out)
	}
}

func TestNoNetworkAsThisUser(t *testing.T) {
	out, err := run(t, Spec{NoNetwork: true}, "cat /proc/net/dev | tail -n +3; readlink /proc/self/ns/net")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	if strings.Contains(out, self) || strings.Contains(out, "eth") {
		t.Errorf("the server shares the host's network: %q (host %s)", out, self)
	}
	if !strings.Contains(out, "lo:") {
		t.Errorf("no loopback in the new namespace: %q", out)
	}
}

func TestFilesystemRuleAsThisUser(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, Spec{ReadOnly: []string{"/usr", "/bin", "/lib", "/etc/passwd"}, ReadWrite: []string{dir, "/dev/null"}},
		"echo ok > "+filepath.Join(dir, "f")+" && cat "+filepath.Join(dir, "f")+"; cat /etc/passwd >/dev/null && echo passwd; cat /etc/hostname || echo denied")
	if err == nil && !strings.Contains(out, "denied") {
		t.Errorf("read outside the paths: %q", out)
	}
	if !strings.Contains(out, "ok") || !strings.Contains(out, "passwd") {
		t.Errorf("allowed paths refused: %q (%v)", out, err)
	}
}

func TestMemoryBreakIsNamed(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here to allocate with")
	}
	_ = python
	out, err := run(t, Spec{MemoryBytes: 64 << 20}, `python3 -c "x = bytearray(512 << 20); print('alive')"`)
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("not named a memory break: %v: %s", err, out)
	}
	t.Logf("%v", err)
	if se.Limit != LimitMemory || se.Err != nil {
		t.Errorf("got %+v", se)
	}
}

func TestExitOfNoSandbox(t *testing.T) {
	var h *Handle
	want := errors.New("wait")
	if got := h.Exit(want); got != want {
		t.Errorf("a nil Handle changed the wait error: %v", got)
	}
}

func TestProgramPaths(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "server")
	if err := os.WriteFile(script, []byte("#!/bin/sh -e\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := programPaths(script)
	if len(got) < 2 || got[0] != script || got[1] != "/bin/sh" {
		t.Errorf("a script's paths: %q", got)
	}
	envScript := filepath.Join(dir, "envserver")
	if err := os.WriteFile(envScript, []byte("#!/usr/bin/env sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got = programPaths(envScript)
	found := false
	for _, p := range got {
		found = found || filepath.Base(p) == "sh"
	}
	if !found {
		t.Errorf("#!/usr/bin/env sh does not add sh: %q", got)
	}
}

// A group a crashed host left behind is removed by the next host's first
// sandbox beneath the same parent.
func TestStaleGroupsAreSwept(t *testing.T) {
	parent, err := ownCgroup("pids")
	if err != nil {
		t.Skipf("no pids cgroup here: %v", err)
	}
	dead := 4194303
	for ; dead > 1; dead-- {
		if _, err := os.Stat("/proc/" + strconv.Itoa(dead)); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	stale := filepath.Join(parent, "snodo-"+strconv.Itoa(dead)+"-7")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Skipf("cannot make a pids group here: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(stale) })
	sweptParents.Delete(parent)
	if out, err := run(t, Spec{MaxProcesses: 10}, "true"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale group %s is still there (%v)", stale, err)
	}
}
