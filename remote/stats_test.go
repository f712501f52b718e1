package remote

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// stats asks the hosts of name for their micro stats ($SRV.STATS.NAME),
// as `nats micro stats NAME` does, and returns the first answer.
func stats(t *testing.T, c *Client, name string) micro.Stats {
	t.Helper()
	m, err := c.nc.Request("$SRV.STATS."+name, nil, 5*time.Second)
	require.NoError(t, err)
	var st micro.Stats
	require.NoError(t, json.Unmarshal(m.Data, &st))
	return st
}

// The standard stats time whole calls and count their errors, per
// endpoint, and the call endpoint's data and Info report the pool's
// state. Before, micro timed the hand-off to a goroutine (µs for calls
// of a second) and counted no error; the host's own count was copied
// onto every endpoint.
func TestStatsTimeWholeCallsAndCountErrors(t *testing.T) {
	e := natsServer(t)
	host(t, e, "ts", 2)
	c := client(t, e, "ts")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := c.Request(ctxFor(t, 20*time.Second), "test/sleep", map[string]any{"ms": 300})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for range 3 {
		_, err := c.Request(ctxFor(t, 20*time.Second), "test/error", map[string]any{"code": -32050, "message": "no"})
		require.Error(t, err)
	}
	// A call is counted once its answer has gone out: wait for the last.
	var st micro.Stats
	testutil.Eventually(t, func() bool {
		st = stats(t, c, "ts")
		return len(st.Endpoints) == 3 && st.Endpoints[0].NumRequests == 7
	}, 20*time.Second, "the seven calls are counted")
	byName := map[string]*micro.EndpointStats{}
	for _, ep := range st.Endpoints {
		byName[ep.Name] = ep
	}
	call := byName["call"]
	require.NotNil(t, call)
	assert.Equal(t, 7, call.NumRequests)
	assert.Equal(t, 3, call.NumErrors)
	assert.GreaterOrEqual(t, call.ProcessingTime, 4*300*time.Millisecond, "the whole calls are timed")
	var data struct {
		PoolState
		InFlight int `json:"in_flight"`
	}
	require.NoError(t, json.Unmarshal(call.Data, &data))
	assert.Equal(t, 2, data.Up)
	assert.Zero(t, data.Restarting)
	assert.Zero(t, data.GivenUp)
	assert.True(t, data.Serving)
	assert.Zero(t, byName["info"].NumErrors)
	assert.Zero(t, byName["listen"].NumRequests)
	assert.Empty(t, byName["listen"].Data)

	si, err := c.Info(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	require.NotNil(t, si.Pool)
	assert.Equal(t, 2, si.Pool.Up)
	// Counted once its answer has gone out, like a call: the answer can
	// reach this caller, and its next request the host, first.
	testutil.Eventually(t, func() bool { return stats(t, c, "ts").Endpoints[1].NumRequests == 1 }, 10*time.Second,
		"the info request is counted on its own endpoint")
}

// Listen errors are counted on the listen endpoint's standard stats: a
// subscription its server refuses (a legacy server refusing
// resources/subscribe) and one its server tore down. Before, the listen endpoint counted none.
func TestStatsCountListenErrors(t *testing.T) {
	e := natsServer(t)
	hostWith(t, e, "old", 1, []snodo.Option{snodo.WithEra(snodo.EraLegacy)}, "-era", "legacy")
	host(t, e, "new", 1)
	old, c := client(t, e, "old"), client(t, e, "new")
	_, err := old.Listen(ctxFor(t, 20*time.Second), snodo.Filter{ResourceSubscriptions: []string{"test://refuse/a"}})
	var re *snodo.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, snodo.CodeInvalidParams, re.Code)
	var st micro.Stats
	require.Eventually(t, func() bool {
		st = stats(t, old, "old")
		return st.Endpoints[2].NumRequests == 1
	}, 20*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, st.Endpoints[2].NumErrors, "the refused listen is an error")
	assert.NotEmpty(t, st.Endpoints[2].LastError)

	// One its server tore down is an error; one closed by its caller is not.
	ctx := ctxFor(t, 20*time.Second)
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	raw, err := c.Request(ctx, "test/subscriptions", nil)
	require.NoError(t, err)
	var open struct{ Open []json.RawMessage }
	require.NoError(t, json.Unmarshal(raw, &open))
	require.Len(t, open.Open, 1)
	_, err = c.Request(ctx, "test/endSubscription", map[string]any{"subscription": open.Open[0], "mode": "teardown"})
	require.NoError(t, err)
	testutil.Receive(t, sub.Done(), 20*time.Second, "the torn-down subscription ended")
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionTeardown)
	sub, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	require.NoError(t, sub.Close())
	require.Eventually(t, func() bool {
		ep := stats(t, c, "new").Endpoints[2]
		return ep.NumRequests == 2 && ep.NumErrors == 1
	}, 20*time.Second, 20*time.Millisecond, "2 listens, 1 error: %+v", stats(t, c, "new").Endpoints[2])
}
