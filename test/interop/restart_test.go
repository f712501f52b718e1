package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
)

// server-everything over Streamable HTTP, killed and started again on
// the same port: it answers a forgotten session with 400 "No valid
// session ID provided", not 404. A plain client and a supervised one
// each serve their next call on one new session; neither is restarted.
func TestServerEverythingHTTPRestartOnTheSamePort(t *testing.T) {
	entry := peerPath(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	srv := startServerEnv(t, []string{"PORT"}, "/mcp", nodePath(t), entry, "streamableHttp")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c, err := snodo.ConnectHTTP(ctx, srv.url)
	require.NoError(t, err)
	defer closeAndWait(t, c)
	require.Equal(t, snodo.EraLegacy, c.Era())
	sc, err := supervisor.Connect(ctx, snodo.HTTP(srv.url))
	require.NoError(t, err)
	defer func() {
		_ = sc.Close()
		<-sc.Done()
	}()
	for _, s := range []snodo.Session{c, sc} {
		_, err := s.ListTools(ctx)
		require.NoError(t, err)
	}

	srv.restart(t)
	for name, s := range map[string]snodo.Session{"plain": c, "supervised": sc} {
		res, err := s.CallTool(ctx, "echo", map[string]any{"message": "again"})
		require.NoError(t, err, "%s: the next call is served on a new session", name)
		assert.Contains(t, res.Text(), "again")
	}
	assert.NoError(t, c.Err(), "the plain client lives on")
	assert.Zero(t, sc.Restarts(), "the supervised client renewed its session in place")
}
