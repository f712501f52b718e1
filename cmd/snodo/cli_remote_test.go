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

// No NATS server at the URL: exit 1 and a connection error that says
// what to check, for a call and for servers.
func TestRemoteNoNATS(t *testing.T) {
	for _, args := range [][]string{{"--server", "nobody", "tools"}, {"servers"}, {"bridge", "--server", "nobody"}} {
		r := snodo(t, append([]string{"--nats", "nats://127.0.0.1:1"}, args...)...).want(t, 1)
		r.oneErrorLine(t, "connecting to NATS at nats://127.0.0.1:1", "is a NATS server running there", "snodo node")
	}
}

// NATS flags that cannot work, or would be silently ignored, are usage
// errors (exit status 2) that say what goes with what.
func TestRemoteFlagMisuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats", "nats://127.0.0.1:1", "--server", "a.b", "tools"}, `--server "a.b"`},
		{[]string{"--nats", "nats://127.0.0.1:1", "--server", "a b", "tools"}, `--server "a b"`},
		{[]string{"--nats", "nats://127.0.0.1:1", "--server", "x", "--prefix", "x y", "tools"}, `--prefix "x y"`},
		{[]string{"--nats", "nats://127.0.0.1:1", "tools", "--", "cmd"}, "--nats URL goes with --server NAME, servers or node"},
		{[]string{"--prefix", "p", "tools", "--", "cmd"}, "--prefix goes with --nats URL or node"},
		{[]string{"--nats-user", "u", "tools", "--", "cmd"}, "--nats-user goes with --nats URL or node"},
		{[]string{"--drain", "5s", "tools", "--", "cmd"}, "--drain goes with node"},
		{[]string{"--max-held", "2", "tools", "--", "cmd"}, "--max-held goes with node"},
		{[]string{"node", "--config", "f.json", "--server", "x"}, "node serves every server of the file"},
		{[]string{"node", "--config", "f.json", "--env", "A=1"}, "--env does not go with node"},
		{[]string{"node", "--config", "f.json", "--timeout", "5s"}, "--timeout does not go with node"},
		{[]string{"node", "--config", "f.json", "--count", "5"}, "--count does not go with node"},
		{[]string{"node", "--config", "f.json", "--json"}, "--json does not go with node"},
		{[]string{"demo", "--json"}, "demo takes no flags"},
		{[]string{"--config", "f.json", "tools", "--", "cmd"}, "--config FILE goes with --server NAME, servers or node"},
		{[]string{"--timeout", "1ms", "demo"}, "demo takes no flags"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--server", "x", "--env", "A=1", "tools"}, "--env does not go with --nats"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--server", "x", "--dir", "/", "tools"}, "--dir does not go with --nats"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--server", "x", "--era", "legacy", "tools"}, "--era does not go with --nats"},
		// Flags that were silently ignored.
		{[]string{"--nats", "nats://127.0.0.1:1", "--config", "f.json", "--server", "x", "tools"}, "--config does not go with --nats"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--config", "f.json", "servers"}, "--config does not go with --nats"},
		{[]string{"--config", "f.json", "--server", "x", "servers"}, "--server does not go with it"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--server", "x", "servers"}, "--server does not go with it"},
		{[]string{"bridge", "--server", "x"}, "bridge: give --nats URL and --server NAME"},
		{[]string{"bridge", "--nats", "nats://127.0.0.1:1"}, "bridge: give --nats URL and --server NAME"},
		{[]string{"bridge", "--nats", "nats://127.0.0.1:1", "--server", "x", "--json"}, "--json does not go with bridge"},
		{[]string{"bridge", "--nats", "nats://127.0.0.1:1", "--server", "x", "--config", "f.json"}, "--config does not go with bridge"},
		{[]string{"bridge", "--nats", "nats://127.0.0.1:1", "--server", "x", "--", "cmd"}, "bridge takes no server command"},
		{[]string{"bridge", "--nats", "nats://127.0.0.1:1", "--server", "a.b"}, `--server "a.b"`},
	} {
		r := snodo(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("snodo %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// Credentials written into a NATS URL (nats://user:password@host,
// nats://token@host) never reach stderr.
func TestRemoteURLCredentialsStayOut(t *testing.T) {
	for _, args := range [][]string{
		{"--nats", "nats://alice:s3cr3t-pw@127.0.0.1:1", "--server", "x", "tools"},
		{"--nats", "nats://s3cr3t-pw@127.0.0.1:1,nats://bob:s3cr3t-pw@127.0.0.1:2", "servers"},
		{"--nats", "nats://s3cr3t-pw@127.0.0.1:1", "node", "--config", writeConfig(t, "")},
	} {
		r := snodo(t, args...)
		if r.code != 1 || strings.Contains(r.stderr, "s3cr3t") || !strings.Contains(r.stderr, "127.0.0.1:1") {
			t.Errorf("snodo %q: exit %d, stderr %q; want 1, the host and no secret", args, r.code, r.stderr)
		}
	}
}
