package snodo_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
)

// The third leg of TestEveryTransportRunsTheSameAPI: the same code
// (snodo.ExerciseSession) over Streamable HTTP, in both eras. The test
// server runs in this process behind connection.InMemory, served by the
// gateway; the client under test reaches it with ConnectHTTP.
func TestEveryTransportRunsTheSameAPIOverHTTP(t *testing.T) {
	for _, era := range []snodo.Era{snodo.EraModern, snodo.EraLegacy} {
		t.Run(string(era), func(t *testing.T) {
			h, err := gateway.New()
			require.NoError(t, err)
			t.Cleanup(func() { _ = h.Close() })
			backend, err := snodo.ConnectTransport(t.Context(), snodo.InMemoryTestServer("-era", string(era)),
				append(h.ConnectOptions(), snodo.WithEra(era))...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = backend.Close(); <-backend.Done() })
			require.NoError(t, h.Attach(backend))
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)

			var opts []snodo.Option
			if era == snodo.EraLegacy {
				opts = append(opts, snodo.WithEra(era))
			}
			c, err := snodo.ConnectHTTP(t.Context(), srv.URL, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close(); <-c.Done() })
			snodo.ExerciseSession(t, c, era)
		})
	}
}
