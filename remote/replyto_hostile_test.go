package remote

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// TestCallOnAHeldReplySubjectIsDropped: a peer that sends a call with
// the reply subject of a call the host is running (someone else's inbox)
// gets it dropped: its answer would reach that caller as its result, and
// holding it lost the first call's cancel, so the first call ran on.
func TestCallOnAHeldReplySubjectIsDropped(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	var rec testutil.LogRecorder
	h, err := NewHost(context.Background(), e.URL(), Serve("dup", p), WithLogger(rec.Logger()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	c := client(t, e, "dup")
	ctx := ctxFor(t, 20*time.Second)

	nc := conn(t, e)
	reply := nats.NewInbox()
	sub, err := nc.SubscribeSync(reply)
	require.NoError(t, err)
	call := func(data string) {
		m := nats.NewMsg("snodo.dup.call")
		m.Reply = reply
		m.Data = []byte(data)
		require.NoError(t, nc.PublishMsg(m))
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"test/sleep","params":{"ms":10000,"honorCancel":true}}`)
	require.Eventually(t, func() bool {
		raw, err := c.Request(ctx, "test/requests", map[string]any{"method": "test/sleep"})
		require.NoError(t, err)
		var got struct{ Requests []json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &got))
		return len(got.Requests) == 1
	}, 10*time.Second, 20*time.Millisecond)

	call(`{"jsonrpc":"2.0","id":1,"method":"test/echo","params":{"forged":true}}`)
	assert.Eventually(t, func() bool { return rec.Has("dropped a call whose reply subject another call holds") },
		5*time.Second, 10*time.Millisecond, "the second call on a held reply subject was not dropped")

	// The first call's cancel still reaches it.
	require.NoError(t, nc.Publish("snodo.dup.cancel", []byte(reply)))
	_, err = c.Request(ctx, "test/waitNotification", map[string]any{"method": "notifications/cancelled", "count": 1, "timeoutMs": 5000})
	require.NoError(t, err, "the first call's cancel was lost")
	for {
		m, err := sub.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		assert.NotEmpty(t, m.Header.Get(hdrKind), "a final reply reached the inbox: %s", m.Data)
	}
}
