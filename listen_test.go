package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenEndToEnd(t *testing.T) {
	c := dialTest(t, nil)
	sub, err := c.Listen(t.Context(), Filter{ToolsListChanged: true, PromptsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	assert.Equal(t, Filter{ToolsListChanged: true}, sub.Acknowledged(), "the test server does not honour prompts")

	_, err = c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 2})
	require.NoError(t, err)
	for range 2 {
		ev := <-sub.Events()
		assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	}
	_, err = c.Request(t.Context(), "test/endSubscription", map[string]any{"subscription": sub.ID(), "mode": "teardown"})
	require.NoError(t, err)
	<-sub.Done()
	assert.ErrorIs(t, sub.Err(), ErrSubscriptionTeardown)

	// The listen request carried the era's _meta (none in the legacy era).
	raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": "subscriptions/listen"})
	require.NoError(t, err)
	var reqs struct {
		Requests []struct {
			Params map[string]json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(raw, &reqs))
	require.Len(t, reqs.Requests, 1)
	assert.JSONEq(t, `{"toolsListChanged":true,"promptsListChanged":true}`, string(reqs.Requests[0].Params["notifications"]))
	for k := range c.requestMeta() {
		assert.Contains(t, string(reqs.Requests[0].Params["_meta"]), k)
	}
}

func TestListenToAnActor(t *testing.T) {
	c := dialTest(t, nil)
	got := make(chan any, 10)
	sys := c.conn.System()
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *SubscriptionEvent, *SubscriptionEnded:
			got <- msg
		}
	}))
	sub, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{"test://a"}}, ListenTo(pid), MaxQueued(8, 0))
	require.NoError(t, err)
	_, err = c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]string{"uri": "test://a"}})
	require.NoError(t, err)
	ev := (<-got).(*SubscriptionEvent)
	assert.Equal(t, "notifications/resources/updated", ev.Method)
	sys.Root.Stop(pid) // the owner goes: the subscription is cancelled
	<-sub.Done()
	assert.ErrorIs(t, sub.Err(), ErrOwnerExited)
}

// MaxQueued sets the byte bound of the queue as it sets the count
// sets its count: past it, a reader that reads nothing sees snodo.ErrSubscriptionQueueFull
// naming the bound, and the subscription is cancelled on the server.
func TestListenMaxQueuedBytes(t *testing.T) {
	const size, bound = 32 << 10, 100 << 10
	c := dialTest(t, nil)
	sub, err := c.Listen(t.Context(), Filter{ToolsListChanged: true}, MaxQueued(0, bound))
	require.NoError(t, err)
	_, err = c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed",
		"params": map[string]any{"pad": strings.Repeat("p", size)}, "count": 8})
	require.NoError(t, err)
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the byte bound did not end the subscription")
	}
	require.ErrorIs(t, sub.Err(), ErrSubscriptionQueueFull)
	assert.Contains(t, sub.Err().Error(), fmt.Sprintf("bound %d bytes", bound))
	var n, queued int
	for ev := range sub.Events() {
		n++
		queued += len(ev.Params)
	}
	assert.Equal(t, 3, n, "3 events of 32 KiB fit in 100 KiB")
	assert.LessOrEqual(t, queued, bound)
}

func TestListenOptionsValidate(t *testing.T) {
	c := dialTest(t, nil)
	_, err := c.Listen(t.Context(), Filter{}, MaxQueued(-1, 0))
	assert.ErrorContains(t, err, "MaxQueued(-1, 0)")
	_, err = c.Listen(t.Context(), Filter{}, MaxQueued(0, -1))
	assert.ErrorContains(t, err, "MaxQueued(0, -1)")
	_, err = c.Listen(t.Context(), Filter{}, ListenTo(nil))
	assert.ErrorContains(t, err, "ListenTo")
}

// A server that takes subscriptions/listen and never acknowledges it must
// not hang Listen: its ctx is the subscription's owner, so a caller cannot
// bound the wait with it. The connection's timeout bounds it.
func TestListenUnacknowledgedTimesOut(t *testing.T) {
	c := dialTest(t, []string{"-silent-listen"}, WithTimeout(200*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := c.Listen(context.Background(), Filter{ToolsListChanged: true})
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrTimeout)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, CodeTimeout, e.Code)
		assert.ErrorContains(t, err, "acknowledg")
	case <-time.After(10 * time.Second):
		t.Fatal("Listen still waits for an acknowledgement that never comes")
	}
	// The server was told to drop the listen request. (This request is
	// not bound by the 200 ms meant for the listen: on a loaded machine
	// the answer may take longer.)
	raw, err := c.Request(t.Context(), "test/waitNotification", map[string]any{"method": "notifications/cancelled", "count": 1, "timeoutMs": 5000},
		Timeout(30*time.Second))
	require.NoError(t, err, "no notifications/cancelled for the abandoned listen request")
	assert.Contains(t, string(raw), "notifications/cancelled")
}
