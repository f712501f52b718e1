package remote

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A caller that finds the client's outbox empty publishes every call
// queued in it. A call that fails to publish reaches its own caller, on
// its pending, not the caller that published it; a call whose caller gave
// up while it was queued is published all the same, and its pending is
// put back by the publisher.
func TestClientOutboxGivesEachCallItsOwnOutcome(t *testing.T) {
	e := natsServer(t)
	nc := conn(t, e)
	c, err := NewClient(nc, "x")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	watcher := conn(t, e)
	seen, err := watcher.SubscribeSync(c.subj.call)
	require.NoError(t, err)
	require.NoError(t, watcher.Flush())

	queued := func(reply string, data []byte, state int32) *pending {
		p := getPending()
		p.msg = nats.Msg{Subject: c.subj.call, Reply: reply, Data: data}
		p.method = "tools/call"
		p.out.Store(state)
		c.out.queued = append(c.out.queued, p) // as another caller's send would
		return p
	}
	big := queued("r.big", make([]byte, int(nc.MaxPayload())+1), outQueued)
	gone := queued("r.gone", []byte(`{"gone":1}`), outAbandoned)
	own := getPending()
	own.msg = nats.Msg{Subject: c.subj.call, Reply: "r.own", Data: []byte(`{"own":1}`)}

	require.NoError(t, c.send(own, "tools/call"), "the publisher's own call went out")
	select {
	case err := <-big.unsent:
		require.ErrorIs(t, err, nats.ErrMaxPayload)
		assert.ErrorContains(t, err, "cannot send tools/call to x over NATS")
	default:
		t.Fatal("the oversized call's failure did not reach its own pending")
	}
	assert.Equal(t, int32(outIdle), big.out.Load(), "its caller owns it again")
	assert.Equal(t, int32(outIdle), own.out.Load())
	assert.Equal(t, int32(outIdle), gone.out.Load(), "put back by the publisher")
	assert.Empty(t, gone.msg.Subject, "put back by the publisher")
	assert.Empty(t, c.out.queued)
	assert.False(t, c.out.sending)

	var replies []string
	for range 2 {
		m, err := seen.NextMsg(5 * time.Second)
		require.NoError(t, err)
		replies = append(replies, m.Reply)
	}
	assert.Equal(t, []string{"r.gone", "r.own"}, replies, "queued calls leave in order; the oversized one never does")
}
