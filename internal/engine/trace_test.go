package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
)

type tracedLine struct {
	dir  connection.Direction
	line string
}

// wireLog is a Trace hook that keeps a copy of every line.
type wireLog struct {
	mu    sync.Mutex
	lines []tracedLine
}

func (l *wireLog) trace(dir connection.Direction, line []byte) {
	l.mu.Lock()
	l.lines = append(l.lines, tracedLine{dir, string(line)})
	l.mu.Unlock()
}

func (l *wireLog) snapshot() []tracedLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]tracedLine(nil), l.lines...)
}

// message decodes a traced line as one JSON-RPC message.
func message(t *testing.T, l tracedLine) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(l.line), &m), "%s line %q", l.dir, l.line)
	return m
}

func TestTraceSeesEveryLineInOrder(t *testing.T) {
	var log wireLog
	c := start(t, Config{Trace: log.trace})

	assert.JSONEq(t, `{"n":1}`, string(mustCall(t, c, "test/echo", map[string]int{"n": 1})))
	require.NoError(t, c.Notify(context.Background(), "notifications/traced", map[string]int{"k": 2}))
	assert.JSONEq(t, `{"ok":true}`, string(mustCall(t, c, "test/garbage", nil)))

	got := log.snapshot()
	for _, l := range got {
		assert.NotContains(t, l.line, "\n", "a traced line keeps its newline")
	}
	require.GreaterOrEqual(t, len(got), 6, "%v", got)

	// The request, then its response.
	req := message(t, got[0])
	assert.Equal(t, connection.Sent, got[0].dir)
	assert.JSONEq(t, `"test/echo"`, string(req["method"]))
	assert.JSONEq(t, `{"n":1}`, string(req["params"]))
	resp := message(t, got[1])
	assert.Equal(t, connection.Received, got[1].dir)
	assert.JSONEq(t, string(req["id"]), string(resp["id"]))
	assert.JSONEq(t, `{"n":1}`, string(resp["result"]))

	// The notification.
	assert.Equal(t, connection.Sent, got[2].dir)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/traced","params":{"k":2}}`, got[2].line)

	// The garbage request, the junk lines before its answer (the first is
	// not JSON, and an empty line is a line too), then the answer.
	garbage := message(t, got[3])
	assert.Equal(t, connection.Sent, got[3].dir)
	assert.JSONEq(t, `"test/garbage"`, string(garbage["method"]))
	assert.Equal(t, tracedLine{connection.Received, "not json"}, got[4])
	junk := got[4 : len(got)-1]
	assert.Contains(t, junk, tracedLine{connection.Received, ""})
	for _, l := range junk {
		assert.Equal(t, connection.Received, l.dir, "%q", l.line)
	}
	last := message(t, got[len(got)-1])
	assert.Equal(t, connection.Received, got[len(got)-1].dir)
	assert.JSONEq(t, string(garbage["id"]), string(last["id"]))
	assert.JSONEq(t, `{"ok":true}`, string(last["result"]))
}

// TestTraceUnderConcurrency: with many callers at once, every request and
// every response is traced exactly once.
func TestTraceUnderConcurrency(t *testing.T) {
	var log wireLog
	c := start(t, Config{Trace: log.trace})
	const callers, calls = 16, 20
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				p := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				res, err := c.Request(context.Background(), "test/echo", json.RawMessage(p), nil)
				if assert.NoError(t, err) {
					assert.JSONEq(t, p, string(res))
				}
			}
		})
	}
	wg.Wait()
	count := map[connection.Direction]int{}
	ids := map[connection.Direction]map[string]bool{connection.Sent: {}, connection.Received: {}}
	for _, l := range log.snapshot() {
		count[l.dir]++
		id := string(message(t, l)["id"])
		assert.False(t, ids[l.dir][id], "%s twice: %s", l.dir, l.line)
		ids[l.dir][id] = true
	}
	assert.Equal(t, callers*calls, count[connection.Sent])
	assert.Equal(t, callers*calls, count[connection.Received])
	assert.Equal(t, ids[connection.Sent], ids[connection.Received])
}

func TestDirectionString(t *testing.T) {
	assert.Equal(t, "sent", connection.Sent.String())
	assert.Equal(t, "received", connection.Received.String())
	assert.Equal(t, "Direction(0)", connection.Direction(0).String())
	assert.True(t, strings.HasPrefix(connection.Direction(7).String(), "Direction("))
}
