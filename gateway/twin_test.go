package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// The legacy-era twin starts when the first legacy client initializes,
// once, and serves the legacy clients in their own era (the server asks
// for a name mid-call); modern clients never start it.
func TestLegacyTwinStartsWithTheFirstLegacyClient(t *testing.T) {
	s := serve(t, nil) // both eras: the main session is modern
	path, err := testutil.BuildServer()
	require.NoError(t, err)
	var starts atomic.Int32
	var twin atomic.Pointer[supervisor.Client]
	require.NoError(t, s.h.AttachLegacy(func(ctx context.Context) (snodo.Session, error) {
		starts.Add(1)
		sc, err := supervisor.Connect(ctx, snodo.Command(path), fast,
			supervisor.WithConnectOptions(append(s.h.ConnectOptions(), snodo.WithEra(snodo.EraLegacy))...))
		if err == nil {
			twin.Store(sc)
		}
		return sc, err
	}))
	t.Cleanup(func() {
		if sc := twin.Load(); sc != nil {
			_ = sc.Close()
			<-sc.Done()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	modern, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(snodo.EraModern))
	require.NoError(t, err)
	defer modern.Close()
	res, err := modern.CallTool(ctx, "echo", map[string]any{"message": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Text())
	assert.Zero(t, starts.Load(), "a modern client starts no twin")

	answer := func(context.Context, *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	for range 2 {
		legacy, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(answer))
		require.NoError(t, err)
		res, err = legacy.CallTool(ctx, "ask", nil)
		require.NoError(t, err)
		assert.Equal(t, "Hello, Ada!", res.Text())
		_ = legacy.Close()
	}
	assert.Equal(t, int32(1), starts.Load(), "the twin started once")
}

// A twin that cannot start: the legacy client's initialize gets 503 with
// the reason; modern clients go on.
func TestLegacyTwinThatCannotStart(t *testing.T) {
	s := serve(t, nil)
	require.NoError(t, s.h.AttachLegacy(func(context.Context) (snodo.Session, error) {
		return nil, errors.New("no legacy server here")
	}))
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	msgs := testutil.Messages(t, resp)
	assert.Contains(t, string(msgs[0]["error"]), "legacy-era connection could not start")
	assert.Contains(t, string(msgs[0]["error"]), "no legacy server here")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	modern, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(snodo.EraModern))
	require.NoError(t, err)
	defer modern.Close()
	_, err = modern.CallTool(ctx, "echo", map[string]any{"message": "hi"})
	require.NoError(t, err)
}
