package supervisor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// A call message to a supervised client's or a pool's PID whose sender
// stops is cancelled: the server is told at once, and the watcher actor
// goes with the call.
func TestCallCancelledWhenTheSenderStopsSupervised(t *testing.T) {
	cmd, args := testutil.Server(t)
	for _, pool := range []bool{false, true} {
		sys := snodoactor.NewQuietSystem(nil)
		var (
			pid     *protoactor.PID
			request func(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error)
			closeIt func() error
		)
		if pool {
			p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 1, fast, WithConnectOptions(snodo.WithActorSystem(sys)))
			require.NoError(t, err)
			pid, request, closeIt = p.PID(), p.Request, p.Close
		} else {
			c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, WithConnectOptions(snodo.WithActorSystem(sys)))
			require.NoError(t, err)
			pid, request, closeIt = c.PID(), c.Request, c.Close
		}
		baseline := testutil.Actors(sys, "")
		sender := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
			if _, ok := ctx.Message().(*protoactor.Started); ok {
				ctx.Request(pid, &snodo.ToolCall{Name: "slow", Args: map[string]int{"ms": 60000}, Options: []snodo.RequestOption{snodo.Timeout(2 * time.Minute)}})
			}
		}))
		testutil.Eventually(t, func() bool {
			raw, err := request(t.Context(), "test/requests", map[string]string{"method": "tools/call"})
			require.NoError(t, err)
			var res struct{ Requests []json.RawMessage }
			require.NoError(t, json.Unmarshal(raw, &res))
			return len(res.Requests) == 1
		}, 10*time.Second, "the server never got the call")
		assert.Equal(t, 1, testutil.Actors(sys, "snodo-owner-watch"), "pool=%v", pool)
		testutil.StopActor(t, sys, sender, 5*time.Second)
		_, err := request(t.Context(), "test/waitNotification",
			map[string]any{"method": "notifications/cancelled", "count": 1, "timeoutMs": 5000})
		require.NoError(t, err, "pool=%v: the server was not told the call was cancelled", pool)
		testutil.Eventually(t, func() bool { return testutil.Actors(sys, "") == baseline },
			10*time.Second, "a watcher actor outlives the call")
		require.NoError(t, closeIt())
		sys.Shutdown()
	}
}
