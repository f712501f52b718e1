package supervisor

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/snodo/snodo/internal/sentinel"
)

// gaveUpError reads right for every limit: no "after 0 restarts" when
// WithIntensity allows none, no "1 restarts".
func TestGaveUpErrorWording(t *testing.T) {
	last := errors.New("server exited with status 3")
	for limit, want := range map[int]string{
		0: "supervisor: gave up at the first exit (WithIntensity allows no restart): server exited with status 3",
		1: "supervisor: gave up after 1 restart in 10s: server exited with status 3",
		3: "supervisor: gave up after 3 restarts in 10s: server exited with status 3",
	} {
		err := &gaveUpError{Restarts: limit, Window: 10 * time.Second, Last: last}
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "raise WithIntensity")
		assert.ErrorIs(t, err, ErrGaveUp)
		assert.ErrorIs(t, err, last)
		assert.NotErrorIs(t, err, sentinel.ErrClosed)
	}
}
