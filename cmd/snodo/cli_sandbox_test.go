package main_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/snodo/snodo/test/testutil"
)

// A --config server's "sandbox" applies, and info shows it.
func TestConfigSandboxShownByInfo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sandboxes need Linux")
	}
	bin, _ := json.Marshal(testutil.ServerPath(t))
	cfg := writeConfig(t, `, "boxed": {"command": `+string(bin)+`, "sandbox": {"maxOpenFiles": 64, "cpuTime": "1m"}}`)
	r := snodo(t, "--config", cfg, "--server", "boxed", "info").want(t, 0)
	if !strings.Contains(r.stdout, "sandbox       cpu 1m0s, files 64") {
		t.Errorf("info does not show the sandbox:\n%s", r.stdout)
	}
	r = snodo(t, "--config", cfg, "--server", "boxed", "--json", "info").want(t, 0)
	var info struct{ Sandbox string }
	r.decode(t, &info)
	if info.Sandbox != "cpu 1m0s, files 64" {
		t.Errorf("--json info's sandbox: %q", info.Sandbox)
	}
	r = snodo(t, "--config", cfg, "--server", "boxed", "call", "openfiles", `{"n":100}`).want(t, 1)
	if !strings.Contains(r.stdout+r.stderr, "too many open files") {
		t.Errorf("the file's open-files limit did not reach the server:\n%s%s", r.stdout, r.stderr)
	}
	r = snodo(t, "--config", cfg, "--server", "legacy", "info").want(t, 0)
	if strings.Contains(r.stdout, "sandbox") {
		t.Errorf("a server without a sandbox shows one:\n%s", r.stdout)
	}
}
