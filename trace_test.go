package snodo

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithWireTrace(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	// The legacy era makes the handshake predictable: initialize, its
	// answer, notifications/initialized.
	c := dialTest(t, nil, WithEra(EraLegacy), WithWireTrace(func(dir Direction, line []byte) {
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
