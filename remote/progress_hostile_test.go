package remote

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// TestCallerCannotForgeAnotherCallersProgress: the progress token on the
// host's connection is the host's (the request id there); a remote
// caller's own _meta.progressToken is dropped, so a caller that names
// another caller's request id gets no progress sent to that call (nor
// keeps its ResetTimeoutOnProgress timer alive).
func TestCallerCannotForgeAnotherCallersProgress(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			e := natsServer(t)
			var opts []snodo.Option
			var flags []string
			if era == "legacy" {
				opts, flags = []snodo.Option{snodo.WithEra(snodo.EraLegacy)}, []string{"-era", "legacy"}
			}
			hostWith(t, e, "prog", 1, opts, flags...)
			victim := client(t, e, "prog")
			hostile := client(t, e, "prog")
			ctx := ctxFor(t, 20*time.Second)

			var seen atomic.Int64
			done := make(chan error, 1)
			go func() {
				_, err := victim.Request(ctx, "test/sleep", map[string]any{"ms": 1500, "honorCancel": true},
					snodo.OnProgress(func(snodo.Progress) { seen.Add(1) }))
				done <- err
			}()
			// Find the victim's request id on the host's connection.
			var id json.RawMessage
			require.Eventually(t, func() bool {
				raw, err := hostile.Request(ctx, "test/requests", map[string]any{"method": "test/sleep"})
				require.NoError(t, err)
				var got struct {
					Requests []struct{ ID json.RawMessage }
				}
				require.NoError(t, json.Unmarshal(raw, &got))
				if len(got.Requests) == 0 {
					return false
				}
				id = got.Requests[0].ID
				return true
			}, 10*time.Second, 20*time.Millisecond)

			raw, err := hostile.Request(ctx, "test/progress", json.RawMessage(
				`{"count":3,"intervalMs":5,"_meta":{"progressToken":`+string(id)+`}}`))
			require.NoError(t, err)
			assert.JSONEq(t, `{"done":3}`, string(raw))
			require.NoError(t, <-done)
			assert.Zero(t, seen.Load(), "the victim got progress another caller's request made")

			// A caller that asks for progress still gets its own.
			var own atomic.Int64
			_, err = hostile.Request(ctx, "test/progress", json.RawMessage(`{"count":2,"intervalMs":5,"_meta":{"progressToken":"mine"}}`),
				snodo.OnProgress(func(snodo.Progress) { own.Add(1) }))
			require.NoError(t, err)
			assert.EqualValues(t, 2, own.Load())
		})
	}
}

// TestRemoteProgressRunsBeforeTheResult: as on a local call, every progress
// update the host sent before its reply runs before the call returns. The
// reply and the last updates often wait together; the reply must not
// overtake them.
func TestRemoteProgressRunsBeforeTheResult(t *testing.T) {
	e := natsServer(t)
	hostWith(t, e, "order", 1, nil)
	c := client(t, e, "order")
	ctx := ctxFor(t, 20*time.Second)
	for i := range 30 {
		var got atomic.Int64
		_, err := c.Request(ctx, "test/progress", json.RawMessage(`{"count":8,"intervalMs":0}`),
			snodo.OnProgress(func(snodo.Progress) { got.Add(1) }))
		require.NoError(t, err)
		require.EqualValues(t, 8, got.Load(), "call %d: updates lost or run after the result", i)
	}
}

// A remote Listen on a host whose server speaks the legacy era is served
// by the host's pool as a local one is: the list changes the server
// declares and the updates of the resources it subscribes to (the
// host's member sends resources/subscribe) reach the remote caller;
// Close unsubscribes. A refused resources/subscribe fails it with the
// server's error.
func TestRemoteListenOnALegacyServer(t *testing.T) {
	e := natsServer(t)
	hostWith(t, e, "old", 1, []snodo.Option{snodo.WithEra(snodo.EraLegacy)}, "-era", "legacy")
	c := client(t, e, "old")
	ctx := ctxFor(t, 30*time.Second)
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	defer sub.Close()
	assert.Equal(t, snodo.Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://a"}}, sub.Acknowledged())
	_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/prompts/list_changed"})
	require.NoError(t, err)
	_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	touch := func() bool {
		raw, err := c.Request(ctx, "test/touch", map[string]string{"uri": "test://a"})
		require.NoError(t, err)
		var res struct{ Notified bool }
		require.NoError(t, json.Unmarshal(raw, &res))
		return res.Notified
	}
	require.True(t, touch())
	for _, want := range []string{"notifications/tools/list_changed", "notifications/resources/updated"} {
		select {
		case ev := <-sub.Events():
			assert.Equal(t, want, ev.Method, "only what was asked for, in order")
		case <-ctx.Done():
			t.Fatalf("no %s reached the subscriber", want)
		}
	}
	require.NoError(t, sub.Close())
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionClosed)
	// The host ends its own subscription after the caller's close: the
	// member is unsubscribed soon after.
	testutil.Eventually(t, func() bool { return !touch() }, 20*time.Second, "the member unsubscribed after the caller's close")

	_, err = c.Listen(ctx, snodo.Filter{ResourceSubscriptions: []string{"test://refuse/x"}})
	var re *snodo.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, snodo.CodeInvalidParams, re.Code)
}
