package snodo

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/testutil"
)

func TestWithWireTrace(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	// The legacy era makes the handshake predictable: initialize, its
	// answer, notifications/initialized.
	c := dialTest(t, nil, WithEra(EraLegacy), WithWireTrace(func(dir connection.Direction, line []byte) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Errorf("%s line is not one JSON object: %q", dir, line)
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s %s", dir, m.Method, m.ID))
	}))
	require.NoError(t, c.Ping(t.Context()))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 5, "%q", got)
	initID := strings.Fields(got[0])[2]
	pingID := strings.Fields(got[3])[2]
	assert.Equal(t, []string{
		"sent initialize " + initID,
		"received  " + initID,
		"sent notifications/initialized ",
		"sent ping " + pingID,
		"received  " + pingID,
	}, got)
}

func TestWithWireTraceRejectsNil(t *testing.T) {
	_, err := Connect(t.Context(), "true", nil, WithWireTrace(nil))
	require.ErrorContains(t, err, "WithWireTrace: nil function")
}

// A trace hook that panics neither wedges the connection (sent lines are
// traced under the writer's lock) nor ends the program (received lines
// are traced on the reader goroutine): the panic is logged, the lines go
// on, and every call is answered.
func TestWithWireTraceThatPanics(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := dialTest(t, nil, WithLogger(logs.Logger()), WithWireTrace(func(dir connection.Direction, line []byte) {
		panic("trace hook: " + dir.String())
	}))
	for range 3 {
		require.NoError(t, c.Ping(t.Context()))
	}
	assert.True(t, logs.Has("the wire trace hook panicked"))
}
