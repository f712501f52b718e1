// Package testutil holds helpers shared by snodo's test packages: building
// the scriptable test server, leak checks, and process and descriptor
// assertions based on /proc (Linux only).
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var build struct {
	once sync.Once
	path string
	err  error
}

// tmpPrefix names the per-process build directories ("snodo-testserver-<pid>-…").
const tmpPrefix = "snodo-testserver-"

// moduleRoot returns the repository root, found from this source file.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testutil: cannot locate source file")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("testutil: no go.mod in %s: %w", root, err)
	}
	return root, nil
}

// ServerPath builds ./test/cmd/testserver once per test process and returns
// the path of the binary. A failed build fails tb with the build output.
func ServerPath(tb testing.TB) string {
	tb.Helper()
	path, err := BuildServer()
	if err != nil {
		tb.Fatalf("building test server: %v", err)
	}
	return path
}

// BuildServer is ServerPath for code without a testing.TB (Example
// functions): it builds the test server once and returns its path.
func BuildServer() (string, error) {
	build.once.Do(func() { build.path, build.err = buildServer() })
	return build.path, build.err
}

func buildServer() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	removeStaleBuilds()
	dir, err := os.MkdirTemp("", tmpPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "snodo-testserver")
	cmd := exec.Command("go", "build", "-o", bin, "./test/cmd/testserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	return bin, nil
}

// removeStaleBuilds deletes build directories left by test processes that
// no longer run.
func removeStaleBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), tmpPrefix)
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + pidText); os.IsNotExist(err) {
			_ = os.RemoveAll(d)
		}
	}
}

// Server returns the command and arguments that start the test server
// with the given flags.
func Server(tb testing.TB, flags ...string) (command string, args []string) {
	tb.Helper()
	return ServerPath(tb), append([]string(nil), flags...)
}
