package servers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/supopts"
)

// Each key of the snodo block is read, checked, and becomes its option:
// the connect options read back give the file's timeout, grace and era.
func TestParseSnodoBlockIntoOptions(t *testing.T) {
	p := parser{f: &File{Path: "t.json", Skipped: map[string]string{}}}
	e, skip, err := p.server("git", []byte(`{"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "cwd": "/srv",
		"snodo": {"pool": 3, "timeout": "30s", "maxRestarts": 2, "window": "1m", "failFast": true, "maxWait": "5s", "era": "legacy", "shutdownGrace": "3s"}}`))
	require.NoError(t, err)
	require.Empty(t, skip)
	assert.Equal(t, "uvx", e.Command)
	assert.Equal(t, []string{"mcp-server-git"}, e.Args)
	assert.Equal(t, map[string]string{"A": "1"}, e.Env)
	assert.Equal(t, "/srv", e.Cwd)
	assert.Equal(t, 3, e.Pool)
	assert.Equal(t, 30*time.Second, e.Timeout)
	assert.Equal(t, 3*time.Second, e.ShutdownGrace)
	assert.Equal(t, "legacy", e.Era)
	require.NotNil(t, e.MaxRestarts)
	assert.Equal(t, 2, *e.MaxRestarts)
	assert.Equal(t, time.Minute, e.Window)
	assert.True(t, e.FailFast)
	assert.Equal(t, 5*time.Second, e.MaxWait)

	s := e.server("")
	assert.Equal(t, snodo.Command("uvx", "mcp-server-git"), s.Target)
	assert.Equal(t, 3, s.Pool)
	require.Len(t, s.Options, 4) // connect options, intensity, fail-fast, max wait
	assert.Equal(t, 4, s.fromFile)
	assert.Equal(t, len(s.Options), cap(s.Options), "an append copies: it never writes past the file's options")
	conn, err := supopts.ConnectOptions(s.Options)
	require.NoError(t, err)
	assert.Len(t, conn, 6) // env, dir, timeout, grace, era, origin
	set, err := connopts.SharedOf(conn)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, set.Timeout)
	assert.Equal(t, 3*time.Second, set.ShutdownGrace)
	assert.True(t, set.Era)
	assert.Equal(t, "git", set.OriginServer)

	// Without a snodo block: the library's defaults, the origin only.
	e, _, err = p.server("plain", []byte(`{"command": "x"}`))
	require.NoError(t, err)
	s = e.server("")
	require.Len(t, s.Options, 1)
	conn, err = supopts.ConnectOptions(s.Options)
	require.NoError(t, err)
	set, err = connopts.SharedOf(conn)
	require.NoError(t, err)
	assert.Zero(t, set.Timeout)
	assert.Zero(t, set.ShutdownGrace)
	assert.False(t, set.Era)
	assert.Equal(t, "plain", set.OriginServer)
}
