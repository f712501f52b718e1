package supervisor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// touched asks r's server to send resources/updated for uri and reports
// whether it had uri subscribed.
func touched(t *testing.T, r snodo.Session, uri string) bool {
	t.Helper()
	raw, err := r.Request(t.Context(), "test/touch", map[string]string{"uri": uri}, snodo.Idempotent())
	require.NoError(t, err)
	var res struct{ Notified bool }
	require.NoError(t, json.Unmarshal(raw, &res))
	return res.Notified
}

// A supervised Listen on a legacy server survives a restart: the
// restarted server is sent resources/subscribe again (the marker says
// when), and its updates keep coming; Close unsubscribes.
func TestLegacyListenSurvivesARestart(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "legacy")
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
	require.NoError(t, err)
	defer c.Close()
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	assert.Equal(t, snodo.Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://a"}}, sub.Acknowledged())
	require.True(t, touched(t, c, "test://a"))
	ev := nextEvent(t, sub)
	assert.Equal(t, "notifications/resources/updated", ev.Method)

	kill(t, c.serverPID())
	assert.Equal(t, ResubscribedMethod, nextEvent(t, sub).Method)
	assert.True(t, touched(t, c, "test://a"), "the restarted server was subscribed again")
	assert.Equal(t, "notifications/resources/updated", nextEvent(t, sub).Method)
	_, err = c.Request(t.Context(), "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	assert.Equal(t, "notifications/tools/list_changed", nextEvent(t, sub).Method)
	assert.Positive(t, c.Restarts())

	require.NoError(t, sub.Close())
	assert.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionClosed)
	assert.False(t, touched(t, c, "test://a"))
}

// A pool's legacy Listen is held by one member; when that member gives
// up and leaves the pool, it moves to a member that stays, which is sent
// resources/subscribe, and the updates keep coming.
func TestPoolLegacyListenMovesWhenItsMemberGivesUp(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "legacy")
	ev := newEvents()
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast, WithIntensity(0, time.Minute), ev.option())
	require.NoError(t, err)
	defer p.Close()
	sub, err := p.Listen(t.Context(), snodo.Filter{ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	var holders []*Client
	for _, m := range p.Members() {
		if touched(t, m, "test://a") {
			holders = append(holders, m)
		}
	}
	require.Len(t, holders, 1, "one member holds the subscription")
	assert.Same(t, holders[0], supervisedOf(sub).Member())
	assert.Equal(t, "notifications/resources/updated", nextEvent(t, sub).Method)
	kill(t, holders[0].serverPID())
	stays := afterGiveUp(t, p, ev)
	assert.Equal(t, ResubscribedMethod, nextEvent(t, sub).Method)
	assert.True(t, touched(t, stays, "test://a"), "the member that stays holds test://a")
	assert.Equal(t, "notifications/resources/updated", nextEvent(t, sub).Method)
	require.NoError(t, sub.Close())
	assert.False(t, touched(t, stays, "test://a"))
}
