package main_test

import (
	"strings"
	"testing"
)

// The NATS commands' usage errors: exit status 2 and a line that says
// what to give.
func TestRemoteUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"node"}, "give --config FILE"},
		{[]string{"--nats-cert", "c.pem", "--nats", "nats://127.0.0.1:4222", "--server", "x", "tools"}, "--nats-cert and --nats-key go together"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--server", "x", "tools", "--", "cmd"}, "either --server NAME or -- SERVER_CMD"},
		{[]string{"node", "--config", "f.json", "--", "cmd"}, "takes no server command"},
	} {
		r := snodo(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("snodo %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// No NATS server at the URL: exit 1 and a connection error.
func TestRemoteNoNATS(t *testing.T) {
	r := snodo(t, "--nats", "nats://127.0.0.1:1", "--server", "nobody", "tools")
	if r.code != 1 || !strings.Contains(r.stderr, "NATS") {
		t.Errorf("exit %d, stderr %q; want 1 and a NATS connection error", r.code, r.stderr)
	}
}
