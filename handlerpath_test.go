package snodo

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// askMany makes test/echo answer input_required with n roots/list input
// requests under the keys k0000…; with WithMaxInputRounds(1) the call
// fulfils them once and then fails with ErrTooManyInputRounds.
func askMany(n int) map[string]any {
	reqs := make(map[string]any, n)
	for i := range n {
		reqs[fmt.Sprintf("k%04d", i)] = map[string]any{"method": "roots/list"}
	}
	return map[string]any{"resultType": "input_required", "inputRequests": reqs}
}

// concurrency counts the handlers running at once and the most seen.
type concurrency struct {
	cur, most, total atomic.Int32
}

func (c *concurrency) enter() {
	c.total.Add(1)
	n := c.cur.Add(1)
	for {
		m := c.most.Load()
		if n <= m || c.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *concurrency) leave() { c.cur.Add(-1) }

func TestInputRequestsTakeSlotsOfTheBound(t *testing.T) {
	for _, tc := range []struct{ bound, inputs int }{{2, 12}, {4, 2000}} {
		t.Run(fmt.Sprintf("%d_under_%d", tc.inputs, tc.bound), func(t *testing.T) {
			var cc concurrency
			c := dialTest(t, []string{"-era", "modern"}, WithMaxServerRequests(tc.bound), WithMaxInputRounds(1),
				WithServerRequestHandler(func(ctx context.Context, req *ServerRequest) (any, error) {
					cc.enter()
					defer cc.leave()
					select { // long enough for the others to pile up against the bound
					case <-time.After(time.Millisecond):
					case <-ctx.Done():
					}
					return map[string]any{"roots": []any{}}, nil
				}))
			_, err := c.requestWithInput(t.Context(), "test/echo", askMany(tc.inputs), nil)
			require.ErrorIs(t, err, ErrTooManyInputRounds, "one round fulfilled, then the bound on rounds")
			assert.Equal(t, int32(tc.inputs), cc.total.Load(), "every input request ran once")
			assert.LessOrEqual(t, cc.most.Load(), int32(tc.bound), "never more handlers at once than WithMaxServerRequests")
			assert.Equal(t, int32(tc.bound), cc.most.Load(), "the bound is used, not just respected")
		})
	}
}

// Over the bound, input requests wait for a slot in order: with a bound
// of 1 they run one by one, in the order of their keys.
func TestInputRequestsWaitInOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	c := dialTest(t, []string{"-era", "modern"}, WithMaxServerRequests(1), WithMaxInputRounds(1),
		WithServerRequestHandler(func(_ context.Context, req *ServerRequest) (any, error) {
			mu.Lock()
			order = append(order, string(req.ID))
			mu.Unlock()
			return map[string]any{"roots": []any{}}, nil
		}))
	_, err := c.requestWithInput(t.Context(), "test/echo", askMany(20), nil)
	require.ErrorIs(t, err, ErrTooManyInputRounds)
	require.Len(t, order, 20)
	for i, id := range order {
		assert.Equal(t, fmt.Sprintf(`"k%04d"`, i), id, "the ID of an input request is its key, as a JSON string")
	}
}

// blocker is a handler that waits for its ctx, counting starts and
// cancellations.
type blocker struct {
	started, cancelled atomic.Int32
	startedCh          chan struct{}
}

func newBlocker() *blocker { return &blocker{startedCh: make(chan struct{}, 4096)} }

func (b *blocker) handle(ctx context.Context, _ *ServerRequest) (any, error) {
	b.started.Add(1)
	b.startedCh <- struct{}{}
	<-ctx.Done()
	b.cancelled.Add(1)
	return nil, ctx.Err()
}

func (b *blocker) waitStarted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-b.startedCh:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d handlers started, want %d", b.started.Load(), n)
		}
	}
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, what)
}

func TestCloseCancelsInputRequests(t *testing.T) {
	b := newBlocker()
	c := dialTest(t, []string{"-era", "modern"}, WithMaxServerRequests(2), WithServerRequestHandler(b.handle))
	errc := make(chan error, 1)
	go func() {
		_, err := c.requestWithInput(context.Background(), "test/echo", askMany(5), nil)
		errc <- err
	}()
	b.waitStarted(t, 2)
	require.NoError(t, c.Close())
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrConnectionClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("the call still waits after Close")
	}
	eventually(t, func() bool { return b.cancelled.Load() == 2 }, "both running handlers cancelled")
	assert.Equal(t, int32(2), b.started.Load(), "the waiting inputs never ran")
}

// The call's ctx and its timeout cancel running handlers and withdraw
// waiting ones, whose slots then serve the next call.
func TestCallCtxAndTimeoutCancelInputRequests(t *testing.T) {
	b := newBlocker()
	c := dialTest(t, []string{"-era", "modern"}, WithMaxServerRequests(1), WithServerRequestHandler(b.handle))

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.requestWithInput(ctx, "test/echo", askMany(3), nil)
		errc <- err
	}()
	b.waitStarted(t, 1)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	eventually(t, func() bool { return b.cancelled.Load() == 1 }, "the running handler cancelled")

	_, err := c.requestWithInput(t.Context(), "test/echo", askMany(2), []RequestOption{Timeout(300 * time.Millisecond)})
	require.ErrorIs(t, err, ErrTimeout)
	assert.Contains(t, err.Error(), "Timeout request option")
	eventually(t, func() bool { return b.cancelled.Load() == 2 }, "the timed-out handler cancelled")
	assert.Equal(t, int32(2), b.started.Load(), "withdrawn inputs never ran")
}

// The line of waiting input requests is bounded: past 4096 waiting, an
// input request fails its call at once, and the call withdraws the rest.
func TestWaitingInputRequestsAreBounded(t *testing.T) {
	b := newBlocker()
	c := dialTest(t, []string{"-era", "modern"}, WithMaxServerRequests(1), WithServerRequestHandler(b.handle))
	_, err := c.requestWithInput(t.Context(), "test/echo", askMany(4200), nil)
	require.ErrorIs(t, err, ErrInputRequest)
	assert.ErrorContains(t, err, "4096 input requests already wait")
	eventually(t, func() bool { return b.cancelled.Load() == 1 }, "the running handler cancelled when the call failed")
	assert.Equal(t, int32(1), b.started.Load(), "the waiting ones were withdrawn, never run")
}
