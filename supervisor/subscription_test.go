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

func nextEvent(t *testing.T, sub *Subscription) snodo.Event {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		require.True(t, ok, "events closed early: %v", sub.Err())
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return snodo.Event{}
}

func TestSubscriptionComesBackAfterARestart(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), cmd, args, fast, ev.option())
	require.NoError(t, err)
	defer c.Close()
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)

	emit := func() {
		_, err := c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
		require.NoError(t, err)
	}
	emit()
	assert.Equal(t, "notifications/tools/list_changed", nextEvent(t, sub).Method)

	kill(t, c.ServerPID())
	marker := nextEvent(t, sub)
	assert.Equal(t, ResubscribedMethod, marker.Method)
	var params struct {
		Resubscriptions int    `json:"resubscriptions"`
		Reason          string `json:"reason"`
		ID              int64  `json:"subscriptionId"`
	}
	require.NoError(t, json.Unmarshal(marker.Params, &params))
	assert.Equal(t, 1, params.Resubscriptions)
	assert.Contains(t, params.Reason, "killed by signal")
	assert.Equal(t, sub.ID(), params.ID)
	assert.Equal(t, 1, sub.Resubscriptions())
	assert.Equal(t, snodo.Filter{ToolsListChanged: true}, sub.Acknowledged())

	// The new server knows the subscription: its events arrive.
	raw, err := c.Request(t.Context(), "test/subscriptions", nil)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "open")
	emit()
	assert.Equal(t, "notifications/tools/list_changed", nextEvent(t, sub).Method)

	require.NoError(t, sub.Close())
	assert.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionClosed)
	_, open := <-sub.Events()
	assert.False(t, open)
}

func TestSubscriptionEndsWithSupervision(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), cmd, args, fast)
	require.NoError(t, err)
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	select {
	case <-sub.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription outlived its supervisor")
	}
	assert.ErrorIs(t, sub.Err(), snodo.ErrConnectionClosed)
	assert.Zero(t, sub.Resubscriptions())
}

func TestSubscriptionRejectsListenTo(t *testing.T) {
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), cmd, args, fast)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Listen(t.Context(), snodo.Filter{}, snodo.ListenTo(c.PID()))
	assert.ErrorContains(t, err, "ListenTo is not supported")
}
