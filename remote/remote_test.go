package remote

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

func TestRequestRoundTrip(t *testing.T) {
	e := natsServer(t)
	host(t, e, "echo", 1)
	c := client(t, e, "echo")
	ctx := ctxFor(t, 20*time.Second)
	raw, err := c.Request(ctx, "test/echo", map[string]any{"a": 1})
	require.NoError(t, err)
	var echoed struct{ A int }
	require.NoError(t, json.Unmarshal(raw, &echoed))
	assert.Equal(t, 1, echoed.A)
	assert.Equal(t, snodo.EraModern, c.Era())

	var got []snodo.Progress
	_, err = c.Request(ctx, "test/progress", map[string]any{"count": 3, "intervalMs": 10},
		snodo.OnProgress(func(p snodo.Progress) { got = append(got, p) }))
	require.NoError(t, err)
	assert.Len(t, got, 3)

	_, err = c.Request(ctx, "test/error", map[string]any{"code": 4242, "message": "nope"})
	var re *snodo.Error
	require.ErrorAs(t, err, &re)
	assert.False(t, re.Local())

	info, err := c.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, "modern", info.Era)
}

// TestResultsLeaveOnTheConnectionTheirCallCameIn: a result leaves on the
// host's serving connection, unless its call asked for progress (the
// updates leave on the reply connection, and NATS keeps order only within
// one connection) or the host is draining (the serving connection closes
// first).
func TestResultsLeaveOnTheConnectionTheirCallCameIn(t *testing.T) {
	e := natsServer(t)
	h := host(t, e, "echo", 1)
	c := client(t, e, "echo", WithHeartbeat(time.Minute)) // no heartbeat on the reply connection meanwhile
	ctx := ctxFor(t, 20*time.Second)
	_, err := c.Request(ctx, "test/echo", nil) // the first call also learns the era, on the reply connection
	require.NoError(t, err)
	c.probes.Wait() // and asks the hosts, which answer on the serving connection
	sent := func() (serve, reply uint64) { return h.serve.Stats().OutMsgs, h.reply.Stats().OutMsgs }

	serve0, reply0 := sent()
	_, err = c.Request(ctx, "test/echo", map[string]any{"a": 1})
	require.NoError(t, err)
	serve1, reply1 := sent()
	assert.Equal(t, serve0+1, serve1, "the result left on the serving connection")
	assert.Equal(t, reply0, reply1)

	var got []snodo.Progress
	_, err = c.Request(ctx, "test/progress", map[string]any{"count": 3, "intervalMs": 10},
		snodo.OnProgress(func(p snodo.Progress) { got = append(got, p) }))
	require.NoError(t, err)
	assert.Len(t, got, 3, "every update came before the result")
	serve2, reply2 := sent()
	assert.Equal(t, serve1, serve2, "a call with progress has its result on the reply connection")
	assert.Equal(t, reply1+4, reply2, "three updates and the result")

	// A call held as the drain starts answers on the reply connection.
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 1000}) // ends well after the drain began
		done <- err
	}()
	testutil.Eventually(t, func() bool { return h.served[0].inFlight.Load() == 1 }, 10*time.Second, "the call is held")
	require.NoError(t, h.Shutdown(ctx))
	require.NoError(t, <-done)
	serve3, reply3 := sent()
	assert.Equal(t, serve2, serve3, "nothing left on the serving connection once the drain began")
	assert.Greater(t, reply3, reply2)
}

func TestNoHost(t *testing.T) {
	e := natsServer(t)
	c := client(t, e, "nobody")
	_, err := c.Request(ctxFor(t, 10*time.Second), "test/echo", nil)
	require.ErrorIs(t, err, ErrNoHost)
	require.ErrorIs(t, err, snodo.ErrConnectionClosed)
	assert.Contains(t, err.Error(), `"nobody"`)
}

func TestTimeoutCancelsOnHost(t *testing.T) {
	e := natsServer(t)
	host(t, e, "slow", 1)
	c := client(t, e, "slow")
	ctx := ctxFor(t, 20*time.Second)
	_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 10000, "honorCancel": true}, snodo.Timeout(200*time.Millisecond))
	require.ErrorIs(t, err, snodo.ErrTimeout)
	raw, err := c.Request(ctx, "test/waitNotification", map[string]any{"method": "notifications/cancelled", "count": 1, "timeoutMs": 5000})
	require.NoError(t, err)
	assert.NotEmpty(t, raw)
}

func TestListenEvents(t *testing.T) {
	e := natsServer(t)
	host(t, e, "subs", 1)
	c := client(t, e, "subs", WithHeartbeat(100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	assert.True(t, sub.Acknowledged().ToolsListChanged)
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 2})
	require.NoError(t, err)
	for range 2 {
		select {
		case ev := <-sub.Events():
			assert.Equal(t, "notifications/tools/list_changed", ev.Method)
		case <-ctx.Done():
			t.Fatal("no event")
		}
	}
	require.NoError(t, sub.Close())
	assert.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionClosed)
}

func TestManyInFlight(t *testing.T) {
	e := natsServer(t)
	host(t, e, "many", 2)
	c := client(t, e, "many")
	ctx := ctxFor(t, 30*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			raw, err := c.Request(ctx, "test/echo", map[string]int{"i": i})
			if err == nil {
				var v struct{ I int }
				if err = json.Unmarshal(raw, &v); err == nil && v.I != i {
					err = errors.New("wrong answer")
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestCallerCapabilitiesReachTheServer(t *testing.T) {
	e := natsServer(t)
	host(t, e, "caps", 1)
	c := client(t, e, "caps", WithConnectOptions(snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}})))
	raw, err := c.Request(ctxFor(t, 20*time.Second), "test/echo", map[string]any{"a": 1})
	require.NoError(t, err)
	var echoed struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(raw, &echoed))
	assert.Contains(t, string(echoed.Meta["io.modelcontextprotocol/clientCapabilities"]), "elicitation")
}

func TestCloseCancelsCallsOnHost(t *testing.T) {
	e := natsServer(t)
	host(t, e, "slow", 1)
	c := client(t, e, "slow")
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(ctxFor(t, 20*time.Second), "test/sleep", map[string]any{"ms": 20000, "honorCancel": true})
		done <- err
	}()
	probe := client(t, e, "slow")
	ctx := ctxFor(t, 20*time.Second)
	require.Eventually(t, func() bool {
		raw, err := probe.Request(ctx, "test/requests", map[string]string{"method": "test/sleep"})
		return err == nil && strings.Contains(string(raw), "test/sleep")
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-done, snodo.ErrClosed)
	_, err := probe.Request(ctx, "test/waitNotification", map[string]any{"method": "notifications/cancelled", "count": 1, "timeoutMs": 5000})
	require.NoError(t, err, "the host cancelled the call of a closed client")
}

func TestResetTimeoutOnProgressAcrossTheHop(t *testing.T) {
	e := natsServer(t)
	host(t, e, "progress", 1)
	c := client(t, e, "progress")
	// 6 updates 150 ms apart: 750 ms in all, over a 400 ms timeout that
	// each update restarts, on the caller and on the host.
	_, err := c.Request(ctxFor(t, 20*time.Second), "test/progress", map[string]any{"count": 6, "intervalMs": 150},
		snodo.Timeout(400*time.Millisecond), snodo.ResetTimeoutOnProgress())
	require.NoError(t, err)
	_, err = c.Request(ctxFor(t, 20*time.Second), "test/progress", map[string]any{"count": 6, "intervalMs": 150},
		snodo.Timeout(400*time.Millisecond), snodo.OnProgress(func(snodo.Progress) {}))
	require.ErrorIs(t, err, snodo.ErrTimeout, "without the reset, the same call times out")
}

func TestNewHostFailuresCloseThePools(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t)
	newPool := func() *supervisor.Pool {
		p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
		require.NoError(t, err)
		return p
	}
	p := newPool()
	_, err := NewHost(context.Background(), e.URL(), Serve("bad.name", p))
	require.ErrorContains(t, err, "letters, digits")
	<-p.Done()

	p = newPool()
	_, err = NewHost(context.Background(), "nats://127.0.0.1:1", Serve("ok", p))
	require.ErrorContains(t, err, "connecting to NATS")
	<-p.Done()

	_, err = NewHost(context.Background(), e.URL())
	require.ErrorContains(t, err, "nothing to serve")
}
