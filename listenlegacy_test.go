package snodo

import (
	"context"
	"errors"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// emitTo has the test server send method to sub: tagged with sub's id in
// the modern era, as a plain notification in the legacy one.
func emitTo(t *testing.T, c *Client, sub *Subscription, method string) {
	t.Helper()
	if c.Era() == EraLegacy {
		notify(t, c, method, nil)
		return
	}
	_, err := c.Request(t.Context(), "test/emit", map[string]any{"method": method, "subscription": sub.ID()})
	require.NoError(t, err)
}

// nextEvent is sub's next event; the server sent it before answering the
// request that made it send it, so it is queued already.
func nextEvent(t *testing.T, sub *Subscription) Event {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		require.True(t, ok, "Events closed: %v", sub.Err())
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return Event{}
	}
}

// noEvent checks nothing is queued on sub.
func noEvent(t *testing.T, sub *Subscription) {
	t.Helper()
	select {
	case ev := <-sub.Events():
		t.Fatalf("unexpected event %s %s", ev.Method, ev.Params)
	default:
	}
}

// On a legacy server Listen serves the subscription itself: it
// acknowledges what the server declares, subscribes the resources, and
// delivers the list changes asked for and the updates of its URIs; the
// notifications it claims skip the handler, the others still reach it;
// Close unsubscribes before it returns.
func TestLegacyListen(t *testing.T) {
	l := newNoteLog()
	c := dialTest(t, []string{"-era", "legacy"}, WithNotificationHandler(l.handle))
	f := Filter{ToolsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: []string{"test://a", "test://b", "test://a"}}
	sub, err := c.Listen(t.Context(), f)
	require.NoError(t, err)
	assert.Equal(t, Filter{ToolsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: []string{"test://a", "test://b"}}, sub.Acknowledged())
	assert.Zero(t, sub.ID())

	notify(t, c, methodToolsListChanged, nil)
	assert.Equal(t, methodToolsListChanged, nextEvent(t, sub).Method)
	touch(t, c, "test://b", true)
	ev := nextEvent(t, sub)
	assert.Equal(t, methodResourceUpdated, ev.Method)
	assert.JSONEq(t, `{"uri":"test://b"}`, string(ev.Params))
	touch(t, c, "test://c", false)                                         // never subscribed
	notify(t, c, methodPromptsListChanged, nil)                            // not asked for: the handler's
	notify(t, c, methodResourceUpdated, map[string]string{"uri": "x://y"}) // not its URI: the handler's
	notify(t, c, methodResourcesListChanged, nil)
	assert.Equal(t, methodResourcesListChanged, nextEvent(t, sub).Method)
	noEvent(t, sub)
	got := l.wait(t, 2)
	assert.Equal(t, methodPromptsListChanged, got[0].Method)
	assert.Equal(t, methodResourceUpdated, got[1].Method)

	require.NoError(t, sub.Close())
	require.ErrorIs(t, sub.Err(), ErrSubscriptionClosed)
	touch(t, c, "test://a", false) // unsubscribed before Close returned
	touch(t, c, "test://b", false)
	notify(t, c, methodToolsListChanged, nil) // no subscription now: the handler's
	got = l.wait(t, 3)
	assert.Equal(t, methodToolsListChanged, got[2].Method)
	_, open := <-sub.Events()
	assert.False(t, open)
}

// Two legacy subscriptions on one URI share its resources/subscribe:
// the first to end does not unsubscribe the other, and both get each
// update.
func TestLegacyListenSharesAURI(t *testing.T) {
	c := dialTest(t, []string{"-era", "legacy"})
	one, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	two, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{"test://a", "test://b"}})
	require.NoError(t, err)
	touch(t, c, "test://a", true)
	assert.Equal(t, methodResourceUpdated, nextEvent(t, one).Method)
	assert.Equal(t, methodResourceUpdated, nextEvent(t, two).Method)
	require.NoError(t, one.Close())
	touch(t, c, "test://a", true) // still two's
	assert.Equal(t, methodResourceUpdated, nextEvent(t, two).Method)
	require.NoError(t, two.Close())
	touch(t, c, "test://a", false)
	touch(t, c, "test://b", false)
	subs := seen(t, c, "resources/subscribe")
	assert.Len(t, subs, 2, "test://a subscribed once, test://b once")
}

// A resources/subscribe the server refuses fails Listen with the
// server's error, and the URIs subscribed before it are unsubscribed.
func TestLegacyListenRefused(t *testing.T) {
	c := dialTest(t, []string{"-era", "legacy"})
	_, err := c.Listen(t.Context(), Filter{ToolsListChanged: true,
		ResourceSubscriptions: []string{"test://a", "test://refuse/x"}})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeInvalidParams, e.Code)
	assert.False(t, e.Local(), "the server's error: %v", err)
	assert.Contains(t, err.Error(), "test://refuse/x")
	touch(t, c, "test://a", false)
	// Nothing is left claiming the list changes.
	assert.Zero(t, c.listens.n.Load())
}

// A legacy subscription ends with its owner ctx (unsubscribing) and with
// the connection (a -32000).
func TestLegacyListenEnds(t *testing.T) {
	c := dialTest(t, []string{"-era", "legacy"})
	ctx, cancel := context.WithCancel(t.Context())
	sub, err := c.Listen(ctx, Filter{ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	cancel()
	testutil.Receive(t, sub.Done(), 10*time.Second, "the end")
	require.ErrorIs(t, sub.Err(), ErrOwnerExited)
	touch(t, c, "test://a", false)

	sub, err = c.Listen(t.Context(), Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	testutil.Receive(t, sub.Done(), 10*time.Second, "the end")
	var e *Error
	require.ErrorAs(t, sub.Err(), &e)
	assert.Equal(t, CodeConnectionClosed, e.Code)
	assert.True(t, errors.Is(sub.Err(), ErrConnectionClosed))
}

// ListenTo works in the legacy era as in the modern one: the actor gets
// the events, then the end, and its termination ends the subscription.
func TestLegacyListenTo(t *testing.T) {
	c := dialTest(t, []string{"-era", "legacy"})
	sys := snodoactor.Shared()
	got := make(chan any, 8)
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *SubscriptionEvent, *SubscriptionEnded:
			got <- msg
		}
	}))
	sub, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{"test://a"}}, ListenTo(pid))
	require.NoError(t, err)
	touch(t, c, "test://a", true)
	ev := testutil.Receive(t, got, 10*time.Second, "the event").(*SubscriptionEvent)
	assert.Equal(t, methodResourceUpdated, ev.Method)
	assert.Same(t, sub, ev.Subscription)
	testutil.StopActor(t, sys, pid, 5*time.Second)
	testutil.Receive(t, sub.Done(), 10*time.Second, "the end")
	require.ErrorIs(t, sub.Err(), ErrOwnerExited)
	touch(t, c, "test://a", false)
}

// An update the server sends before it answers resources/subscribe (some
// do, to give the current state) is the subscription's first event.
func TestLegacyListenKeepsAnUpdateSentWhileSubscribing(t *testing.T) {
	l := newNoteLog()
	c := dialTest(t, []string{"-era", "legacy", "-updated-on-subscribe"}, WithNotificationHandler(l.handle))
	sub, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	ev := nextEvent(t, sub)
	assert.Equal(t, methodResourceUpdated, ev.Method)
	assert.JSONEq(t, `{"uri":"test://a"}`, string(ev.Params))
	require.NoError(t, sub.Close())
	require.NoError(t, c.notes.flush(t.Context()))
	l.mu.Lock()
	assert.Empty(t, l.notes, "the subscription claimed it")
	l.mu.Unlock()
}
