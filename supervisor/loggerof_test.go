package supervisor

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/seam"
)

// loggerOf is the logger seam.SupervisorSetup reads among opts.
func loggerOf(opts ...Option) (*slog.Logger, error) {
	_, l, err := seam.SupervisorSetup(opts)
	return l, err
}

// The logger code that builds on supervisors reads is the last WithLogger
// among the options, a discarding logger without one, and an error for
// an invalid option.
func TestSetupLogger(t *testing.T) {
	var buf bytes.Buffer
	a := slog.New(slog.NewTextHandler(&buf, nil))
	b := slog.New(slog.NewTextHandler(&buf, nil))

	got, err := loggerOf(WithLogger(a), WithLogger(b))
	require.NoError(t, err)
	require.Same(t, b, got)

	got, err = loggerOf()
	require.NoError(t, err)
	got.Error("nowhere")
	require.Zero(t, buf.Len(), "the default logger discards")

	_, err = loggerOf(WithLogger(nil))
	require.ErrorContains(t, err, "nil logger")
}
