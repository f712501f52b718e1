package servers_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/servers"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

func TestParseClaudeDesktopFile(t *testing.T) {
	f, err := servers.Parse("claude.json", []byte(`{
		"mcpServers": {
			"files": {"command": "npx", "args": ["-y", "server-filesystem", "/srv"], "env": {"A": "1", "B": ""}, "cwd": "/srv"},
			"git": {"command": "uvx", "args": ["mcp-server-git"], "snodo": {"pool": 3, "timeout": "30s", "maxRestarts": 2, "window": "1m", "failFast": true, "maxWait": "5s", "era": "legacy", "shutdownGrace": "2s"}},
			"web": {"url": "https://example.com/mcp"},
			"api": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
			"sse": {"type": "sse", "url": "https://old.example.com/sse?key=k", "headers": {"Authorization": "Bearer t"}},
			"ws": {"type": "websocket", "url": "wss://ws.example.com/mcp"},
			"old": {"command": "x", "disabled": true}
		}
	}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"files", "git", "web", "api", "sse"}, names(f), "file order, skipped ones left out")
	files, err := f.Lookup("files")
	require.NoError(t, err)
	assert.Equal(t, snodo.Command("npx", "-y", "server-filesystem", "/srv"), files.Target)
	assert.Equal(t, 1, files.Pool)
	assert.Len(t, files.Options, 1) // WithConnectOptions: two env vars, the dir and the origin
	assert.Nil(t, files.OAuth)

	git, err := f.Lookup("git")
	require.NoError(t, err)
	assert.Equal(t, 3, git.Pool)
	assert.Len(t, git.Options, 4) // connect options, intensity, fail-fast, max wait

	web, err := f.Lookup("web")
	require.NoError(t, err)
	assert.Equal(t, snodo.HTTP("https://example.com/mcp"), web.Target)
	assert.Equal(t, "https://example.com/mcp", web.Target.String())
	api, err := f.Lookup("api")
	require.NoError(t, err)
	assert.Len(t, api.Options, 1) // the header and the origin
	sse, err := f.Lookup("sse")
	require.NoError(t, err)
	assert.Equal(t, "https://old.example.com/sse", sse.Target.String(), "the HTTP+SSE transport, its query left out")
	assert.Len(t, sse.Options, 1) // the origin: its headers go with the transport
	assert.Contains(t, f.Skipped["ws"], `transport "websocket"`)
	assert.Equal(t, "disabled", f.Skipped["old"])
	_, err = f.Lookup("ws")
	require.ErrorContains(t, err, `claude.json: server "ws": skipped`)
	_, err = f.Lookup("nope")
	require.ErrorContains(t, err, `server "nope": no such server`)
	require.ErrorContains(t, err, `"files"`)
}

func TestParseVSCodeFileWarnsAboutUnknownKeys(t *testing.T) {
	f, err := servers.Parse("mcp.json", []byte(`{
		"inputs": [],
		"servers": {"s": {"type": "stdio", "command": "srv", "envFile": ".env", "snodo": {"poolsize": 2}}}
	}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"s"}, names(f))
	assert.Equal(t, []string{
		`mcp.json: "inputs": unknown top-level key, ignored`,
		`mcp.json: server "s": "envFile": unknown key, ignored`,
		`mcp.json: server "s": "snodo.poolsize": unknown key, ignored`,
	}, f.Warnings)
}

func TestParseBrokenFiles(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"not json", `{"mcpServers": `, `bad.json: not valid JSON`},
		{"not an object", `[1]`, `bad.json: want an object, got an array`},
		{"no servers", `{"other": {}}`, `bad.json: no "mcpServers" (or "servers") object`},
		{"both keys", `{"mcpServers": {}, "servers": {}}`, `bad.json: "servers": the file has both "mcpServers" and "servers"`},
		{"servers not an object", `{"servers": []}`, `bad.json: "servers": want an object, got an array`},
		{"server not an object", `{"servers": {"a": "x"}}`, `bad.json: server "a": want an object, got a string`},
		{"duplicate server", `{"servers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `bad.json: "servers": key "a" appears twice`},
		{"no command", `{"servers": {"a": {"args": []}}}`, `bad.json: server "a": "command": missing or empty`},
		{"http without url", `{"servers": {"a": {"type": "http"}}}`, `bad.json: server "a": "url": missing or empty`},
		{"http url not http", `{"servers": {"a": {"type": "http", "url": "ftp://x/"}}}`, `bad.json: server "a": "url": not an http:// or https:// URL`},
		{"http header number", `{"servers": {"a": {"type": "http", "url": "http://x/", "headers": {"K": 1}}}}`, `bad.json: server "a": "headers.K": want a string`},
		{"http with env", `{"servers": {"a": {"type": "http", "url": "http://x/", "env": {"K": "v"}}}}`, `bad.json: server "a": "env": an http server runs elsewhere`},
		{"http with args", `{"servers": {"a": {"url": "http://x/", "args": ["-v"]}}}`, `bad.json: server "a": "args": an http server runs elsewhere`},
		{"http with cwd", `{"servers": {"a": {"url": "http://x/", "cwd": "/tmp"}}}`, `bad.json: server "a": "cwd": an http server runs elsewhere`},
		{"http with grace", `{"servers": {"a": {"url": "http://x/", "snodo": {"shutdownGrace": "1s"}}}}`, `bad.json: server "a": "snodo.shutdownGrace": an http server is no process`},
		{"command with headers", `{"servers": {"a": {"command": "x", "headers": {"K": "v"}}}}`, `bad.json: server "a": "headers": only an http server`},
		{"args of numbers", `{"servers": {"a": {"command": "x", "args": [1]}}}`, `bad.json: server "a": "args": want an array of strings, got an array`},
		{"env number", `{"servers": {"a": {"command": "x", "env": {"PORT": 80}}}}`, `bad.json: server "a": "env.PORT": want a string, got the number 80`},
		{"pool zero", `{"servers": {"a": {"command": "x", "snodo": {"pool": 0}}}}`, `bad.json: server "a": "snodo.pool": 0 must be at least 1`},
		{"pool text", `{"servers": {"a": {"command": "x", "snodo": {"pool": "3"}}}}`, `bad.json: server "a": "snodo.pool": want a whole number, got a string`},
		{"bad duration", `{"servers": {"a": {"command": "x", "snodo": {"timeout": "30"}}}}`, `bad.json: server "a": "snodo.timeout": "30" is not a duration`},
		{"bad era", `{"servers": {"a": {"command": "x", "snodo": {"era": "new"}}}}`, `bad.json: server "a": "snodo.era": "new": want "modern" or "legacy"`},
		{"trailing data", `{"servers": {}} {}`, `bad.json: not valid JSON: data after the object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := servers.Parse("bad.json", []byte(tc.data))
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.want), "got %q, want it to start with %q", err, tc.want)
			var fe *servers.FileError
			assert.True(t, errors.As(err, &fe))
		})
	}
}

func TestLoadResolvesCwdAgainstTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	abs := t.TempDir()
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x", "cwd": "sub"}, "b": {"command": "x", "cwd": `+quote(abs)+`}}}`), 0o600))
	f, err := servers.Load(path)
	require.NoError(t, err)
	a, _ := f.Lookup("a")
	b, _ := f.Lookup("b")
	assert.Equal(t, filepath.Join(dir, "sub"), dirOf(t, a))
	assert.Equal(t, abs, dirOf(t, b))

	// Parse has no file's directory: a relative cwd stays relative, to
	// this process's working directory.
	f, err = servers.Parse(path, []byte(`{"mcpServers": {"a": {"command": "x", "cwd": ".."}}}`))
	require.NoError(t, err)
	parent, err := filepath.Abs("..")
	require.NoError(t, err)
	assert.Equal(t, parent, dirOf(t, f.Servers[0]))

	_, err = servers.Load(filepath.Join(dir, "missing.json"))
	require.ErrorContains(t, err, "missing.json")
}

// A server from a file connects with the file's env and cwd: the real
// test server reports them.
func TestServerConnectUsesTheFile(t *testing.T) {
	cmd, args := testutil.Server(t)
	dir := t.TempDir()
	f, err := servers.Parse("t.json", []byte(`{"mcpServers": {"t": {"command": `+quote(cmd)+`, "args": `+quoteAll(args)+`, "env": {"SNODO_FILE_TEST": "yes"}, "cwd": `+quote(dir)+`, "snodo": {"pool": 2}}}}`))
	require.NoError(t, err)
	s, err := f.Lookup("t")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := supervisor.NewPool(ctx, s.Target, s.Pool, s.Options...)
	require.NoError(t, err)
	assert.Equal(t, 2, len(p.Members()))
	raw, err := p.Request(ctx, "test/env", map[string]string{"name": "SNODO_FILE_TEST"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"value":"yes","set":true}`, string(raw))
	raw, err = p.Request(ctx, "test/cwd", nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"dir":`+quote(dir)+`}`, string(raw))
	require.NoError(t, p.Close())
	<-p.Done()

	// The program's own options come after the file's and win: a
	// supervised client of one server, with the variable replaced.
	own := append(s.Options, supervisor.WithConnectOptions(snodo.WithEnv("SNODO_FILE_TEST", "mine")))
	c, err := supervisor.Connect(ctx, s.Target, own...)
	require.NoError(t, err)
	raw, err = c.Request(ctx, "test/env", map[string]string{"name": "SNODO_FILE_TEST"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"value":"mine","set":true}`, string(raw))
	assert.Equal(t, snodo.Origin{Server: "t", Member: "t"}, c.Origin(), "the file names the server")
	require.NoError(t, c.Close())
	<-c.Done()
}

// dirOf is the working directory s's options start its server in: the
// test server, started in s's stead, reports it.
func dirOf(t *testing.T, s *servers.Server) string {
	t.Helper()
	cmd, args := testutil.Server(t)
	c, err := supervisor.Connect(t.Context(), snodo.Command(cmd, args...), s.Options...)
	require.NoError(t, err)
	defer func() {
		_ = c.Close()
		<-c.Done()
	}()
	raw, err := c.Request(t.Context(), "test/cwd", nil)
	require.NoError(t, err)
	var got struct{ Dir string }
	require.NoError(t, json.Unmarshal(raw, &got))
	return got.Dir
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func quoteAll(ss []string) string {
	if ss == nil {
		ss = []string{}
	}
	b, _ := json.Marshal(ss)
	return string(b)
}

// names are f's servers' names in file order.
func names(f *servers.File) []string {
	var out []string
	for _, s := range f.Servers {
		out = append(out, s.Name)
	}
	return out
}
