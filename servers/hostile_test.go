package servers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/servers"
)

// A value in the wrong place may be a secret (a token written as "env":
// "TOKEN=…", an API key in "args"): errors name the field and the type,
// never a string's contents.
func TestFileErrorsKeepValuesOut(t *testing.T) {
	for _, data := range []string{
		`{"mcpServers": {"a": {"command": "x", "env": "TOKEN=s3cr3t"}}}`,
		`{"mcpServers": {"a": {"command": "x", "args": "--api-key=s3cr3t"}}}`,
		`{"mcpServers": {"a": {"command": "x", "env": {"TOKEN": ["s3cr3t"]}}}}`,
		`{"mcpServers": {"a": "s3cr3t"}}`,
		`{"mcpServers": {"a": {"command": ["x", "--key", "s3cr3t"]}}}`,
	} {
		_, err := servers.Parse("mcp.json", []byte(data))
		require.Error(t, err, data)
		assert.NotContains(t, err.Error(), "s3cr3t")
		assert.Contains(t, err.Error(), `server "a"`)
	}
}

// An environment variable name the process cannot have is the file's
// error, naming the file, the server and the variable, before anything
// starts.
func TestFileEnvNamesChecked(t *testing.T) {
	for name, want := range map[string]string{
		`A=B`:       `mcp.json: server "a": "env.A=B": `,
		`NUL\u0000`: `mcp.json: server "a": "env.NUL\x00": `,
		``:          `mcp.json: server "a": "env": empty variable name`,
	} {
		_, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "env": {"`+name+`": "v"}}}}`))
		require.Error(t, err, name)
		assert.True(t, strings.HasPrefix(err.Error(), want), "got %q, want it to start with %q", err, want)
		var fe *servers.FileError
		assert.True(t, errors.As(err, &fe))
	}
}

// Load reads at most 1 MiB: a huge file is refused at once
// instead of filling memory, and a device that never ends is not read at
// all (TestLoadRefusesWhatIsNotARegularFile).
func TestLoadBoundsTheFile(t *testing.T) {
	done := make(chan error, 1)
	go func() { _, err := servers.Load("/dev/zero"); done <- err }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, servers.ErrNotRegularFile)
	case <-time.After(10 * time.Second):
		t.Fatal("Load(/dev/zero) did not return within 10 s")
	}
	path := filepath.Join(t.TempDir(), "big.json")
	big := `{"mcpServers": {"a": {"command": "x", "args": ["` + strings.Repeat("x", 1<<20) + `"]}}}`
	require.NoError(t, os.WriteFile(path, []byte(big), 0o600))
	_, err := servers.Load(path)
	require.ErrorContains(t, err, "big.json")
	require.ErrorContains(t, err, "larger than")
	_, err = servers.Parse("big.json", []byte(big))
	require.ErrorContains(t, err, "larger than")
}

// Nil arguments are errors that say what to pass, never panics.
func TestRouterNilArguments(t *testing.T) {
	f, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x"}}}`))
	require.NoError(t, err)
	var nilCtx context.Context
	_, err = servers.StartRouter(context.Background(), nil, nil, nil)
	assert.ErrorContains(t, err, "nil *servers.File")
	_, err = servers.NewRouter(context.Background(), nil)
	assert.ErrorContains(t, err, "nil *servers.File")
	_, err = servers.StartRouter(nilCtx, nil, nil, f)
	assert.ErrorContains(t, err, "nil context.Context")
	_, err = servers.NewRouter(nilCtx, f)
	assert.ErrorContains(t, err, "nil context.Context")
}

// A pool size is bounded: a typo (10000 for 10) must not start ten
// thousand processes at once.
func TestPoolSizeBounded(t *testing.T) {
	_, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "snodo": {"pool": 10000}}}}`))
	require.ErrorContains(t, err, `mcp.json: server "a": "snodo.pool": 10000 is more than 256`)
	f, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "snodo": {"pool": 256}}}}`))
	require.NoError(t, err)
	assert.Equal(t, 256, f.Servers[0].Pool)
}
