package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snodo/snodo/test/testutil"
)

// --probe-timeout sets how long the server/discover probe waits: a
// modern-only server that answers it after 1.5 s (one slow to start)
// fails with a shorter bound, with an error naming the flag, and is
// reached with a longer one — even beyond the --timeout that bounds the
// probe when the flag is left out.
func TestProbeTimeoutFlag(t *testing.T) {
	slow := []string{"-era", "modern", "-discover-delay", "1500ms"}
	r := snodo(t, against(t, []string{"--probe-timeout", "200ms", "info"}, slow...)...).want(t, 1)
	r.oneErrorLine(t, "server/discover got no answer within 200ms", "need a longer --probe-timeout")
	if strings.Contains(r.stderr, "WithProbeTimeout") {
		t.Errorf("a library option named to a command-line user:\n%s", r.stderr)
	}
	// --timeout alone bounds the probe, and the error says which flag lets
	// it wait longer.
	r = snodo(t, against(t, []string{"--timeout", "1s", "info"}, slow...)...).want(t, 1)
	r.oneErrorLine(t, "server/discover got no answer within 1s", "--probe-timeout")
	// Given, the flag wins over --timeout: slow to start, quick requests.
	r = snodo(t, against(t, []string{"--timeout", "1s", "--probe-timeout", "20s", "info"}, slow...)...).want(t, 0)
	if !strings.Contains(r.stdout, "modern, protocol 2026-07-28") {
		t.Errorf("info:\n%s", r.stdout)
	}
}

// --probe-timeout is refused where it would be ignored or cannot work.
func TestProbeTimeoutFlagMisuse(t *testing.T) {
	server := testutil.ServerPath(t)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"zero":           {[]string{"--probe-timeout", "0s", "info", "--", server}, "--probe-timeout 0s: give a positive duration"},
		"negative":       {[]string{"--probe-timeout", "-1s", "info", "--", server}, "--probe-timeout -1s: give a positive duration"},
		"not a duration": {[]string{"--probe-timeout", "soon", "info", "--", server}, "-probe-timeout"},
		"with era":       {[]string{"--probe-timeout", "5s", "--era", "legacy", "info", "--", server}, "--probe-timeout goes without --era"},
		"over NATS":      {[]string{"--probe-timeout", "5s", "--nats", "nats://127.0.0.1:1", "--server", "x", "info"}, "--probe-timeout does not go with --nats"},
		"node":           {[]string{"--probe-timeout", "5s", "node", "--config", "x.json"}, "--probe-timeout does not go with node"},
	} {
		t.Run(name, func(t *testing.T) {
			r := snodo(t, c.args...).want(t, 2)
			if !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "snodo -h") {
				t.Errorf("stderr lacks %q or the pointer to the usage:\n%s", c.want, r.stderr)
			}
		})
	}
	// A server of the --config file that sets its era gets no probe.
	bin, _ := json.Marshal(server)
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"fixed": {"command": `+string(bin)+`, "snodo": {"era": "legacy"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := snodo(t, "--config", cfg, "--server", "fixed", "--probe-timeout", "5s", "info").want(t, 2)
	if !strings.Contains(r.stderr, `server "fixed"`) || !strings.Contains(r.stderr, "leave the flag out") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// A server of the --config file whose "timeout" is shorter than 10 s has
// its probe bounded by it, as --timeout bounds it: no wait of the run is
// longer than the timeout the user set.
func TestConfigTimeoutBoundsTheProbe(t *testing.T) {
	bin, _ := json.Marshal(testutil.ServerPath(t))
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"silent": {"command": `+string(bin)+`, "args": ["-era", "modern", "-silent-discover"], "snodo": {"timeout": "300ms"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := snodo(t, "--config", cfg, "--server", "silent", "info").want(t, 1)
	r.oneErrorLine(t, "server/discover got no answer within 300ms", "--probe-timeout")
}
