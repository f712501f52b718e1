package supervisor

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/httpserver"
)

// A supervised client of an HTTP+SSE server (2024-11-05), through the
// fallback of an HTTP Target and through the transport directly,
// connects again when the server ends its stream: the next call works
// on a new stream.
func TestSupervisedSSEReconnectsAfterTheStreamEnds(t *testing.T) {
	for name, target := range map[string]func(url string) snodo.Target{
		"HTTP fallback": snodo.HTTP,
		"SSE transport": func(url string) snodo.Target { return snodo.TransportTarget(connection.SSE(url, nil, nil)) },
	} {
		t.Run(name, func(t *testing.T) {
			srv := &httpserver.SSE{}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			sc, err := Connect(ctx, target(hs.URL+"/sse"), WithBackoff(Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Multiplier: 2}))
			require.NoError(t, err)
			defer sc.Close()
			res, err := sc.CallTool(ctx, "echo", map[string]any{"text": "first"})
			require.NoError(t, err)
			assert.Equal(t, "first", res.Text())
			srv.EndStreams()
			require.Eventually(t, func() bool { return sc.Restarts() >= 1 }, 10*time.Second, 10*time.Millisecond)
			res, err = sc.CallTool(ctx, "echo", map[string]any{"text": "second"})
			require.NoError(t, err, "the new stream answers")
			assert.Equal(t, "second", res.Text())
			assert.EqualValues(t, 2, srv.Streams())
			assert.Equal(t, snodo.EraLegacy, sc.Era())
		})
	}
}
