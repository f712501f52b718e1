package substream

import (
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// The messages the tests' actors receive (sent by Options.Post).
type (
	eventMsg struct {
		sub *Subscription
		Event
	}
	endMsg struct {
		sub *Subscription
		err error
	}
)

// testPost sends pid the test's messages in c's actor system.
func testPost(c *engine.Conn, pid *protoactor.PID) func(s *Subscription, ev *Event, err error) {
	return func(s *Subscription, ev *Event, err error) {
		if ev != nil {
			c.System().Root.Send(pid, &eventMsg{s, *ev})
			return
		}
		c.System().Root.Send(pid, &endMsg{s, err})
	}
}

// collector spawns an actor that forwards every subscription message it
// receives to the returned channel.
func collector(t *testing.T, c *engine.Conn) (*protoactor.PID, chan any) {
	t.Helper()
	got := make(chan any, 100)
	pid := c.System().Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *eventMsg, *endMsg:
			got <- msg
		}
	}))
	t.Cleanup(func() { c.System().Root.Stop(pid) })
	return pid, got
}

func TestActorReceivesEventsAndTheEnd(t *testing.T) {
	c := startConn(t, engine.Config{})
	pid, got := collector(t, c)
	s := open(t, c, toolsFilter, Options{Actor: pid, Post: testPost(c, pid)})
	_, ok := <-s.Events()
	assert.False(t, ok, "Events is closed when an actor receives the events")
	for k := range 5 {
		emit(t, c, s.ID(), k, 1)
	}
	for k := range 5 {
		m, ok := testutil.Receive(t, got, 5*time.Second, "a message").(*eventMsg)
		require.True(t, ok)
		assert.Same(t, s, m.sub)
		gotK, id := eventInfo(t, m.Event)
		assert.Equal(t, k, gotK)
		assert.Equal(t, s.ID(), id)
	}
	call(t, c, "test/endSubscription", map[string]any{"subscription": s.ID(), "mode": "graceful"})
	end, ok := testutil.Receive(t, got, 5*time.Second, "a message").(*endMsg)
	require.True(t, ok)
	assert.Same(t, s, end.sub)
	assert.NoError(t, end.err)
	assert.NoError(t, waitEnded(t, s))
}

func TestOwnerActorTerminatingCancelsOnTheServer(t *testing.T) {
	c := startConn(t, engine.Config{})
	pid, _ := collector(t, c)
	s := open(t, c, toolsFilter, Options{Actor: pid, Post: testPost(c, pid)})
	c.System().Root.Stop(pid)
	err := waitEnded(t, s)
	require.ErrorIs(t, err, sentinel.ErrOwnerExited)
	assert.Contains(t, err.Error(), pid.Id)
	assert.Equal(t, []int64{s.ID()}, cancelledOnServer(t, c, 1))
	assert.Empty(t, openOnServer(t, c))
}

func TestListenToADeadActorFails(t *testing.T) {
	c := startConn(t, engine.Config{})
	stopped := make(chan struct{})
	pid := c.System().Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if _, ok := ctx.Message().(*protoactor.Stopped); ok {
			close(stopped) // after the actor left the registry
		}
	}))
	c.System().Root.Stop(pid)
	<-stopped
	_, err := Open(t.Context(), c, listenParams(toolsFilter), nil, Options{Actor: pid, Post: testPost(c, pid)})
	require.ErrorIs(t, err, sentinel.ErrOwnerExited)
}

// Open with no connection, or no ctx, fails with an error saying what to
// pass, and starts nothing.
func TestOpenWithoutAConnectionOrAContext(t *testing.T) {
	_, err := Open(t.Context(), nil, listenParams(toolsFilter), nil, Options{})
	require.ErrorContains(t, err, "nil *engine.Conn")
	c := startConn(t, engine.Config{})
	_, err = Open(nil, c, listenParams(toolsFilter), nil, Options{}) //nolint:staticcheck // the point of the test
	require.ErrorContains(t, err, "nil context.Context")
	assert.Empty(t, openOnServer(t, c))
}
