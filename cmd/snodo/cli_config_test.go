package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snodo/snodo/test/testutil"
)

// writeConfig writes an mcpServers file naming the test server twice
// (once modern, once legacy) and a server that cannot start.
func writeConfig(t *testing.T, extra string) string {
	t.Helper()
	bin, _ := json.Marshal(testutil.ServerPath(t))
	path := filepath.Join(t.TempDir(), "mcp.json")
	data := `{"mcpServers": {
		"modern": {"command": ` + string(bin) + `, "args": ["-era", "modern"], "env": {"SNODO_CONFIG_TEST": "from-file"}},
		"legacy": {"command": ` + string(bin) + `, "args": ["-era", "legacy"]}` + extra + `
	}}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigServerRunsTheNamedServer(t *testing.T) {
	cfg := writeConfig(t, "")
	r := snodo(t, "--config", cfg, "--server", "legacy", "info").want(t, 0)
	if !strings.Contains(r.stdout, "legacy") {
		t.Errorf("info of the legacy server:\n%s", r.stdout)
	}
	r = snodo(t, "--config", cfg, "--server", "modern", "--json", "request", "test/env", `{"name":"SNODO_CONFIG_TEST"}`).want(t, 0)
	var env struct{ Value string }
	r.decode(t, &env)
	if env.Value != "from-file" {
		t.Errorf("the file's env did not reach the server: %q", r.stdout)
	}
	snodo(t, "--config", cfg, "--server", "modern", "call", "echo", `{"message":"hi"}`).want(t, 0)

	// The file's warnings go to stderr, once, and the command still runs.
	warned := writeConfig(t, `, "x": {"command": "y", "colour": "blue"}`)
	r = snodo(t, "--config", warned, "--server", "legacy", "info").want(t, 0)
	if strings.Count(r.stderr, "warning:") != 1 || !strings.Contains(r.stderr, `server "x": "colour"`) {
		t.Errorf("the unknown key is not warned about on stderr once:\n%s", r.stderr)
	}

	// An unknown name is a usage error that lists the names the file has.
	r = snodo(t, "--config", cfg, "--server", "nope", "tools").want(t, 2)
	for _, want := range []string{`server "nope": no such server`, `"modern" "legacy"`, "snodo -h"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = snodo(t, "--server", "modern", "tools").want(t, 2)
	if !strings.Contains(r.stderr, "--server NAME goes with --config FILE") {
		t.Errorf("usage error: %s", r.stderr)
	}
}

func TestConfigServersListsEveryServer(t *testing.T) {
	cfg := writeConfig(t, "")
	r := snodo(t, "--config", cfg, "--json", "servers").want(t, 0)
	var got struct {
		Servers []struct {
			Name, Era, Error string
			Tools            int
		}
	}
	r.decode(t, &got)
	if len(got.Servers) != 2 || got.Servers[0].Name != "modern" || got.Servers[0].Era != "modern" ||
		got.Servers[1].Era != "legacy" || got.Servers[0].Tools == 0 || got.Servers[1].Tools == 0 {
		t.Errorf("servers: %+v", got.Servers)
	}
	r = snodo(t, "--config", cfg, "servers").want(t, 0)
	if !strings.Contains(r.stdout, "modern") || !strings.Contains(r.stdout, "tools") {
		t.Errorf("servers:\n%s", r.stdout)
	}

	broken := writeConfig(t, `, "gone": {"command": "/nonexistent/mcp-server"}`)
	r = snodo(t, "--config", broken, "servers").want(t, 1)
	if !strings.Contains(r.stdout, "gone") || !strings.Contains(r.stdout, "error:") || !strings.Contains(r.stdout, "legacy") {
		t.Errorf("a server that cannot start is listed with its error, the others still:\n%s", r.stdout)
	}
}

func TestConfigBrokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x", "args": "y"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := snodo(t, "--config", path, "--server", "a", "tools").want(t, 1)
	r.oneErrorLine(t, "bad.json", `server "a"`, `"args"`, "want an array of strings")
}

func TestTraceServers(t *testing.T) {
	r := snodo(t, "--config", writeConfig(t, ""), "--trace", "servers").want(t, 0)
	for _, want := range []string{"snodo servers  ", "\n  server/discover  ", "\n  initialize  ", "\n  tools/list  "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// A file whose only server is skipped has no server to use: servers says
// so and fails, and --server naming it says why it was skipped.
func TestConfigOnlySkippedServers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"web": {"type": "websocket", "url": "ws://localhost:1/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := snodo(t, "--config", path, "servers").want(t, 1)
	for _, want := range []string{"no server snodo can use", `"web": transport "websocket"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("servers: stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("servers printed a list: %q", r.stdout)
	}
	r = snodo(t, "--config", path, "--server", "web", "tools").want(t, 1)
	if !strings.Contains(r.stderr, `snodo: `+path+`: server "web": skipped: transport "websocket"`) {
		t.Errorf("--server naming a skipped server does not say why:\n%s", r.stderr)
	}
	r = snodo(t, "--config", path, "--server", "nope", "tools").want(t, 2)
	if !strings.Contains(r.stderr, `and skipped ["web"]`) {
		t.Errorf("the skipped names are not listed:\n%s", r.stderr)
	}
}

// A named server that cannot start points at its entry in the file, not
// at a SERVER_CMD the user never wrote.
func TestConfigServerCannotStartPointsAtTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"gone": {"command": "/nonexistent/cmd"}, "nopath": {"command": "snodo-no-such-command"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gone", "nopath"} {
		r := snodo(t, "--config", path, "--server", name, "tools").want(t, 1)
		r.oneErrorLine(t, `"command" of server "`+name+`" in `+path)
		if strings.Contains(r.stderr, "SERVER_CMD") {
			t.Errorf("stderr points at SERVER_CMD: %s", r.stderr)
		}
	}
}

// servers checks its flags as every other command does: a value no
// command could use, or a listen-only flag, is a usage error (2), not
// silently ignored nor a failure of every server (1).
func TestConfigServersChecksItsFlags(t *testing.T) {
	cfg := writeConfig(t, "")
	for name, flags := range map[string][]string{
		"unknown era":     {"--era", "bogus"},
		"zero timeout":    {"--timeout", "0s"},
		"line cap":        {"--max-line-bytes", "10"},
		"line cap past":   {"--max-line-bytes", "1073741825"},
		"env no value":    {"--env", "NOVALUE"},
		"root not a dir":  {"--root", "/nonexistent/dir"},
		"input rounds":    {"--max-input-rounds", "0"},
		"listen flag":     {"--tools"},
		"listen count":    {"--count", "3"},
		"negative listen": {"--for", "-1s"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--config", cfg}, flags...)
			r := snodo(t, append(args, "servers")...).want(t, 2)
			if !strings.Contains(r.stderr, "snodo -h") || r.stdout != "" {
				t.Errorf("a usage error, before any server starts:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
		})
	}
}

// servers reports each server's failure as the other commands do: in the
// command line's words (its flags, not the library's options; the
// file's "command" to check), not as the library's raw error.
func TestConfigServersDescribesFailures(t *testing.T) {
	bin, _ := json.Marshal(testutil.ServerPath(t))
	cfg := writeConfig(t, `, "gone": {"command": "/nonexistent/mcp-server"}, "slow": {"command": `+string(bin)+`, "args": ["-era", "modern", "-silent-discover"]}`)
	r := snodo(t, "--config", cfg, "--timeout", "300ms", "servers").want(t, 1)
	for _, want := range []string{`check the "command" of server "gone" in ` + cfg, "need a longer --probe-timeout"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "snodo: ") || strings.Contains(r.stdout, "WithProbeTimeout") {
		t.Errorf("the library's raw error:\n%s", r.stdout)
	}
}

// A --config file that is missing or unreadable is named as the
// --config file, not reported as a server that could not start ("check
// SERVER_CMD (after --)", when there is none).
func TestConfigFileMissingOrUnreadable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, args := range [][]string{
		{"--config", missing, "servers"},
		{"--config", missing, "--server", "x", "info"},
	} {
		r := snodo(t, args...).want(t, 1)
		r.oneErrorLine(t, "--config "+missing+": no such file or directory", "give the path of an mcpServers JSON file")
		if strings.Contains(r.stderr, "SERVER_CMD") || strings.Contains(r.stderr, "cannot start the server") {
			t.Errorf("a missing file reported as a server that cannot start:\n%s", r.stderr)
		}
	}
	snodo(t, "node", "--config", missing).want(t, 1).oneErrorLine(t, "snodo node: --config "+missing+": no such file or directory")
	if os.Geteuid() == 0 {
		return // root reads any file
	}
	locked := writeConfig(t, "")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	r := snodo(t, "--config", locked, "servers").want(t, 1)
	r.oneErrorLine(t, "--config "+locked+": permission denied")
}

// Flags given on the command line win over the --config file's settings,
// --era and --unset as well: the file's "era" and "env" overrode them.
func TestConfigFlagsWinOverTheFile(t *testing.T) {
	bin, _ := json.Marshal(testutil.ServerPath(t))
	cfg := writeConfig(t, `, "fixed": {"command": `+string(bin)+`, "snodo": {"era": "legacy"}}`)
	r := snodo(t, "--config", cfg, "--server", "fixed", "--json", "info").want(t, 0)
	var info struct{ Era string }
	r.decode(t, &info)
	if info.Era != "legacy" {
		t.Fatalf("the file's era: %q", info.Era)
	}
	r = snodo(t, "--config", cfg, "--server", "fixed", "--era", "modern", "--json", "info").want(t, 0)
	r.decode(t, &info)
	if info.Era != "modern" {
		t.Errorf("--era modern lost to the file's era: %q", info.Era)
	}
	var env struct {
		Value string
		Set   bool
	}
	r = snodo(t, "--config", cfg, "--server", "modern", "--unset", "SNODO_CONFIG_TEST", "--json", "request", "test/env", `{"name":"SNODO_CONFIG_TEST"}`).want(t, 0)
	r.decode(t, &env)
	if env.Set {
		t.Errorf("--unset lost to the file's env: %+v", env)
	}
}

// A request that times out on the --config file's "timeout" says so:
// the error gave --timeout's default (1m0s), which had not applied.
func TestConfigTimeoutIsTheOneReported(t *testing.T) {
	bin, _ := json.Marshal(testutil.ServerPath(t))
	cfg := writeConfig(t, `, "short": {"command": `+string(bin)+`, "snodo": {"timeout": "300ms"}}`)
	sleep := []string{"request", "test/sleep", `{"ms":20000,"honorCancel":true}`}
	r := snodo(t, append([]string{"--config", cfg, "--server", "short"}, sleep...)...).want(t, 1)
	r.oneErrorLine(t, `no answer within 300ms (the "timeout" of server "short" in `+cfg+`); raise it, or give --timeout`)
	r = snodo(t, append([]string{"--config", cfg, "--server", "short", "--timeout", "200ms"}, sleep...)...).want(t, 1)
	r.oneErrorLine(t, "no answer within 200ms; raise --timeout")
}

// spoofServer is a modern server in sh whose serverInfo carries escape
// sequences (a window-title OSC, a C1 CSI that clears the screen); it
// answers every later request with an empty tool list.
const spoofServer = `answer() {
	case "$1" in *'"id":'*) ;; *) return ;; esac
	id=${1#*\"id\":}; id=${id%%,*}
	printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$2"
}
IFS= read -r line || exit 0
answer "$line" '{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"evil\u001b]0;pwned\u0007","version":"1\u009b2J"},"resultType":"complete"}'
while IFS= read -r line; do
	answer "$line" '{"tools":[],"resultType":"complete"}'
done
`

// The servers table shows the control characters of the file's server
// names and of the servers' own serverInfo instead of writing them to
// the terminal (they went out raw: a title change, a cleared screen).
func TestConfigServersTableIsSafeToPrint(t *testing.T) {
	script := filepath.Join(t.TempDir(), "spoof.sh")
	if err := os.WriteFile(script, []byte(spoofServer), 0o600); err != nil {
		t.Fatal(err)
	}
	sh, _ := json.Marshal(script)
	cfg := writeConfig(t, `, "spoof": {"command": "sh", "args": [`+string(sh)+`]}, "e\u001b[31mvil": {"command": "/nonexistent/x"}`)
	r := snodo(t, "--config", cfg, "servers").want(t, 1) // the last one cannot start
	if strings.ContainsAny(r.stdout, "\x1b\x07\u009b") {
		t.Fatalf("control characters reached stdout: %q", r.stdout)
	}
	for _, want := range []string{`evil\x1b]0;pwned\x07 1\x9b2J`, `e\x1b[31mvil`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

// --dir replaces the file's "cwd", even one that does not exist: the
// file's was still checked, and failed the run.
func TestConfigDirFlagReplacesTheFilesCwd(t *testing.T) {
	bin, _ := json.Marshal(testutil.ServerPath(t))
	cfg := writeConfig(t, `, "moved": {"command": `+string(bin)+`, "cwd": "/nonexistent/snodo-dir"}`)
	dir := t.TempDir()
	var cwd struct{ Dir string }
	snodo(t, "--config", cfg, "--server", "moved", "--dir", dir, "--json", "request", "test/cwd").want(t, 0).decode(t, &cwd)
	if cwd.Dir != dir {
		t.Errorf("the server ran in %q, not --dir %q", cwd.Dir, dir)
	}
	r := snodo(t, "--config", cfg, "--server", "moved", "info").want(t, 1)
	r.oneErrorLine(t, "/nonexistent/snodo-dir", `"cwd"`)
}

// servers runs at most 8 of the file's servers at a time: it started
// them all at once, one process per server however many the file named.
// Each server here is a shell that marks itself alive in a directory for
// as long as its test server runs, and notes how many were alive when it
// started; snodo waits for a server's exit before starting the next.
func TestConfigServersBoundsHowManyRunAtOnce(t *testing.T) {
	dir := t.TempDir()
	alive := filepath.Join(dir, "alive")
	if err := os.Mkdir(alive, 0o700); err != nil {
		t.Fatal(err)
	}
	counts := filepath.Join(dir, "counts")
	script := filepath.Join(dir, "server.sh")
	body := `touch "$1/$$"; ls "$1" | wc -l >> "$2"; "$3" -era modern -discover-delay 100ms; rm "$1/$$"` + "\n"
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{script, alive, counts, testutil.ServerPath(t)})
	var entries []string
	for i := range 20 {
		entries = append(entries, fmt.Sprintf(`"s%d": {"command": "sh", "args": %s}`, i, args))
	}
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {`+strings.Join(entries, ",")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := snodo(t, "--config", cfg, "servers").want(t, 0)
	if n := strings.Count(r.stdout, "5 tools"); n != 20 {
		t.Fatalf("%d of 20 servers listed:\n%s", n, r.stdout)
	}
	data, err := os.ReadFile(counts)
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, f := range strings.Fields(string(data)) {
		n, _ := strconv.Atoi(f)
		most = max(most, n)
	}
	if most > 8 {
		t.Errorf("%d servers ran at once, want at most 8 (counts %s)", most, strings.Fields(string(data)))
	}
}
