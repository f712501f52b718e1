package supervisor

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// LoggerOf is the last WithLogger among the options, a discarding logger
// without one, and an error for an invalid option.
func TestLoggerOf(t *testing.T) {
	var buf bytes.Buffer
	a := slog.New(slog.NewTextHandler(&buf, nil))
	b := slog.New(slog.NewTextHandler(&buf, nil))

	got, err := LoggerOf(WithLogger(a), WithLogger(b))
	require.NoError(t, err)
	require.Same(t, b, got)

	got, err = LoggerOf()
	require.NoError(t, err)
	got.Error("nowhere")
	require.Zero(t, buf.Len(), "the default logger discards")

	_, err = LoggerOf(WithLogger(nil))
	require.ErrorContains(t, err, "nil logger")
}
