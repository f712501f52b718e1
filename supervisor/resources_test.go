package supervisor

import (
	"context"
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

// A supervised client's resource subscription survives a restart: the
// restarted server is subscribed again before it takes calls, and the
// updates keep reaching the handler.
func TestSubscribeResourceSurvivesARestart(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "legacy")
	updates := make(chan string, 16)
	handler := snodo.WithNotificationHandler(func(_ context.Context, n *snodo.Notification) {
		if u, err := n.ResourceUpdated(); err == nil {
			updates <- u.URI
		}
	})
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, WithConnectOptions(handler))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SubscribeResource(t.Context(), "test://a"))
	assert.True(t, touched(t, c, "test://a"))
	assert.Equal(t, "test://a", testutil.Receive(t, updates, 5*time.Second, "an update"))

	kill(t, c.serverPID())
	assert.True(t, touched(t, c, "test://a"), "the restarted server was subscribed again")
	assert.Equal(t, "test://a", testutil.Receive(t, updates, 5*time.Second, "an update"))
	assert.Positive(t, c.Restarts())

	require.NoError(t, c.UnsubscribeResource(t.Context(), "test://a"))
	assert.False(t, touched(t, c, "test://a"))
}

// A pool keeps a URI on one member: subscribing again and unsubscribing
// go to it, and Shrink moves it to a member that stays.
func TestPoolSubscribeResourceHasMemberAffinity(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "legacy")
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 3, fast)
	require.NoError(t, err)
	defer p.Close()
	holders := func() int {
		n := 0
		for _, m := range p.Members() {
			if touched(t, m, "test://a") {
				n++
			}
		}
		return n
	}
	require.NoError(t, p.SubscribeResource(t.Context(), "test://a"))
	require.NoError(t, p.SubscribeResource(t.Context(), "test://a"))
	assert.Equal(t, 1, holders(), "one member holds the subscription")

	// Shrink closes the least loaded first, the first member on a tie:
	// the one the first call went to, which holds the URI.
	holder := p.Members()[0]
	require.True(t, touched(t, holder, "test://a"))
	require.NoError(t, p.Shrink(2))
	require.NotContains(t, p.Members(), holder)
	assert.Equal(t, 1, holders(), "the member that stays holds it")

	require.NoError(t, p.UnsubscribeResource(t.Context(), "test://a"))
	assert.Equal(t, 0, holders())
}

func TestSubscribeResourceModernIsUnsupported(t *testing.T) {
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 1, fast)
	require.NoError(t, err)
	defer p.Close()
	assert.ErrorIs(t, p.SubscribeResource(t.Context(), "test://a"), snodo.ErrSubscribeUnsupported)
	assert.ErrorIs(t, p.Members()[0].SubscribeResource(t.Context(), "test://a"), snodo.ErrSubscribeUnsupported)
}
