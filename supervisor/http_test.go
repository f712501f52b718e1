package supervisor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/httpserver"
)

// A supervised HTTP client answers the end of its session (404) with a
// new connection, and so a new session: the call that met the end fails
// with ErrSessionExpired, the next one works on the new session.
func TestSupervisedHTTPNewSessionAfterExpiry(t *testing.T) {
	srv := &httpserver.HTTP{Era: "legacy", Misbehave: "expire"}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sc, err := Connect(ctx, snodo.HTTP(hs.URL+"/mcp"), WithBackoff(Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Multiplier: 2}))
	require.NoError(t, err)
	defer sc.Close()
	_, err = sc.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	require.Error(t, err)
	assert.True(t, errors.Is(err, snodo.ErrSessionExpired), "%v", err)
	require.Eventually(t, func() bool { return sc.Restarts() >= 1 }, 10*time.Second, 10*time.Millisecond)
	tools, err := sc.ListTools(ctx)
	require.NoError(t, err, "the new session answers")
	assert.Len(t, tools, 1)
	assert.Equal(t, snodo.EraLegacy, sc.Era())
}

// A supervised HTTP client whose server forgets the session (a 400
// naming it, as server-everything answers after a restart) renews the
// session in place: the call succeeds and nothing restarts.
func TestSupervisedHTTPSessionRenewedInPlace(t *testing.T) {
	srv := &httpserver.HTTP{Era: "legacy", ForgottenStatus: http.StatusBadRequest}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sc, err := Connect(ctx, snodo.HTTP(hs.URL+"/mcp"))
	require.NoError(t, err)
	defer sc.Close()
	for i := range 3 {
		srv.Expire()
		res, err := sc.CallTool(ctx, "echo", map[string]any{"text": "hi"})
		require.NoError(t, err)
		assert.Equal(t, "hi", res.Text())
		assert.EqualValues(t, 2+i, srv.Sessions())
	}
	assert.Zero(t, sc.Restarts(), "renewed in place, not restarted")
}
