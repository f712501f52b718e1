package engine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRouteHandsOverOnlyABufferItFills: a large answer keeps the read
// buffer only when it fills at least half of it; otherwise it is copied
// and the buffer stays with the reader.
func TestRouteHandsOverOnlyABufferItFills(t *testing.T) {
	h := newRouteHarness(t)
	result := `"` + string(bytes.Repeat([]byte("y"), zeroCopyBytes)) + `"`
	for _, tc := range []struct {
		spare    int
		handOver bool
	}{{0, true}, {zeroCopyBytes, true}, {4 * zeroCopyBytes, false}} {
		cl := newCall(&noOptions)
		id, err := h.c.table.add(cl, 0, 0)
		require.NoError(t, err)
		line := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"result":` + result + `}`)
		buf := make([]byte, len(line), len(line)+tc.spare)
		copy(buf, line)
		assert.Equal(t, tc.handOver, h.c.route(buf, false), "spare capacity %d", tc.spare)
		<-cl.wake
		assert.Equal(t, result, string(cl.result))
		assert.Equal(t, tc.handOver, &cl.result[0] == &buf[len(`{"jsonrpc":"2.0","id":`+strconv.FormatInt(id, 10)+`,"result":`)])
	}
}

// TestCompanyCountsAnswersNotStreams: a subscription's stream stays in the
// table for as long as it lives; it must not turn a lone caller's direct
// write into a hand-off to the writer goroutine. A caller answered but
// not yet returned still counts: woken with others, it is about to send.
func TestCompanyCountsAnswersNotStreams(t *testing.T) {
	tb := newTable()
	sc := newCall(&CallOptions{moduleCallOptions: moduleCallOptions{Stream: func(string, json.RawMessage) {}}})
	stream, _ := tb.add(sc, 0, 0)
	first := newCall(&noOptions)
	id1, _ := tb.add(first, 0, 0)
	assert.False(t, tb.company(), "one caller and a stream")
	second := newCall(&noOptions)
	id2, _ := tb.add(second, 0, 0)
	assert.True(t, tb.company(), "two callers")
	tb.complete(id1, nil, nil)
	assert.True(t, tb.company(), "one answered, not yet returned")
	tb.release(first)
	assert.False(t, tb.company())
	assert.True(t, tb.abandon(id2, second))
	tb.release(second)
	tb.complete(stream, nil, nil)
	tb.release(sc)
	assert.False(t, tb.company())
	assert.Zero(t, tb.answers.Load())
}
