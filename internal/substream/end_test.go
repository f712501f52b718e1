package substream

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
)

func TestCloseCancelsOnTheServer(t *testing.T) {
	c := startConn(t, engine.Config{})
	s := open(t, c, toolsFilter, Options{})
	keep := open(t, c, toolsFilter, Options{})
	emit(t, c, s.ID(), 1, 2)
	next(t, s) // the events are in the queue before Close
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.ErrorIs(t, s.Err(), sentinel.ErrSubscriptionClosed)
	assert.Len(t, drain(t, s), 1, "Events closes after the events already queued")
	assert.Equal(t, []int64{s.ID()}, cancelledOnServer(t, c, 1))
	assert.Equal(t, []int64{keep.ID()}, openOnServer(t, c))
	assert.NoError(t, keep.Err())
}

func TestOwnerContextDoneCancelsOnTheServer(t *testing.T) {
	c := startConn(t, engine.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Open(ctx, c, listenParams(toolsFilter), nil, Options{})
	require.NoError(t, err)
	cancel()
	err = waitEnded(t, s)
	require.ErrorIs(t, err, sentinel.ErrOwnerExited)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, drain(t, s))
	assert.Equal(t, []int64{s.ID()}, cancelledOnServer(t, c, 1))
	assert.Empty(t, openOnServer(t, c))
}

func TestOpenWithADoneContextSendsNothing(t *testing.T) {
	c := startConn(t, engine.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Open(ctx, c, listenParams(toolsFilter), nil, Options{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "before the server acknowledged")
	assert.Empty(t, openOnServer(t, c))
}

func TestGracefulEndLeavesErrNil(t *testing.T) {
	c := startConn(t, engine.Config{})
	s := open(t, c, toolsFilter, Options{})
	emit(t, c, s.ID(), 5, 3)
	call(t, c, "test/endSubscription", map[string]any{"subscription": s.ID(), "mode": "graceful"})
	require.NoError(t, waitEnded(t, s))
	assert.Len(t, drain(t, s), 3, "Events closes after the last event")
	received := call(t, c, "test/received", map[string]string{"method": "notifications/cancelled"})
	assert.JSONEq(t, `{"messages":[]}`, string(received), "a graceful end is not cancelled")
}

func TestServerTeardownIsADistinctError(t *testing.T) {
	c := startConn(t, engine.Config{})
	s := open(t, c, toolsFilter, Options{})
	emit(t, c, s.ID(), 5, 2)
	call(t, c, "test/endSubscription", map[string]any{"subscription": s.ID(), "mode": "teardown"})
	err := waitEnded(t, s)
	require.ErrorIs(t, err, sentinel.ErrSubscriptionTeardown)
	assert.Contains(t, err.Error(), "server shutting down", "the server's reason is kept")
	var e *jsonrpc.Error
	assert.NotErrorAs(t, err, &e)
	assert.Len(t, drain(t, s), 2)
}

func TestServerCrashEndsEverySubscription(t *testing.T) {
	c := startConn(t, engine.Config{})
	subs := []*Subscription{open(t, c, toolsFilter, Options{}), open(t, c, toolsFilter, Options{}), open(t, c, toolsFilter, Options{})}
	emit(t, c, subs[1].ID(), 0, 1)
	_, err := c.Request(context.Background(), "test/crash", map[string]int{"code": 3}, nil)
	requireClosed(t, err, sentinel.ErrServerExited)
	for _, s := range subs {
		requireClosed(t, waitEnded(t, s), sentinel.ErrServerExited)
	}
	assert.Len(t, drain(t, subs[1]), 1)
	<-c.Done()
}

func TestConnectionCloseEndsEverySubscription(t *testing.T) {
	c := startConn(t, engine.Config{})
	a, b := open(t, c, toolsFilter, Options{}), open(t, c, toolsFilter, Options{MaxQueue: 1})
	require.NoError(t, c.Close())
	requireClosed(t, waitEnded(t, a), sentinel.ErrClosed)
	requireClosed(t, waitEnded(t, b), sentinel.ErrClosed)
	_, err := Open(context.Background(), c, listenParams(toolsFilter), nil, Options{})
	requireClosed(t, err, sentinel.ErrClosed)
}

func TestOpenFailsWhenTheServerRefuses(t *testing.T) {
	c := startConn(t, engine.Config{}, "-era", "legacy")
	start := time.Now()
	_, err := Open(context.Background(), c, listenParams(toolsFilter), nil, Options{})
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, jsonrpc.CodeMethodNotFound, e.Code)
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err = Open(context.Background(), c, listenParams(toolsFilter), nil, Options{MaxQueue: -1})
	assert.ErrorContains(t, err, "must be positive")
}

// requireClosed checks err is the connection's local -32000 wrapping reason.
func requireClosed(t *testing.T, err error, reason error) {
	t.Helper()
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, jsonrpc.CodeConnectionClosed, e.Code, err.Error())
	require.True(t, e.Local())
	require.ErrorIs(t, err, reason)
}

// A server teardown (notifications/cancelled for the listen request)
// ends the request without a cancellation going back: the sink's end of
// the subscription used to race the reader's completion of the request,
// and the listen goroutine, woken by the first, sent
// notifications/cancelled for a request the server had ended (15 times
// in 100 teardowns under -race).
func TestServerTeardownIsNeverCancelledBack(t *testing.T) {
	c := startConn(t, engine.Config{})
	for range 100 {
		s := open(t, c, toolsFilter, Options{})
		call(t, c, "test/endSubscription", map[string]any{"subscription": s.ID(), "mode": "teardown"})
		require.ErrorIs(t, waitEnded(t, s), sentinel.ErrSubscriptionTeardown)
	}
	call(t, c, "test/echo", nil) // read after every cancellation the client wrote
	received := call(t, c, "test/received", map[string]string{"method": "notifications/cancelled"})
	assert.JSONEq(t, `{"messages":[]}`, string(received))
}
