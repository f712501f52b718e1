package supervisor

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/supopts"
)

// loggerOf is the logger supopts.Setup reads among opts.
func loggerOf(opts ...Option) (*slog.Logger, error) {
	_, _, l, err := supopts.Setup(opts)
	return l, err
}

// The logger code that builds on supervisors reads is the last
// snodo.WithLogger among the connect options, a discarding logger
// without one, and an error for an invalid option.
func TestSetupLogger(t *testing.T) {
	var buf bytes.Buffer
	a := slog.New(slog.NewTextHandler(&buf, nil))
	b := slog.New(slog.NewTextHandler(&buf, nil))

	got, err := loggerOf(WithConnectOptions(snodo.WithLogger(a)), WithConnectOptions(snodo.WithTimeout(time.Second), snodo.WithLogger(b)))
	require.NoError(t, err)
	require.Same(t, b, got)

	got, err = loggerOf()
	require.NoError(t, err)
	got.Error("nowhere")
	require.Zero(t, buf.Len(), "the default logger discards")

	_, err = loggerOf(WithConnectOptions(snodo.WithOwner(nil)))
	require.ErrorContains(t, err, "nil PID")
	_, err = loggerOf(WithConnectOptions(nil))
	require.ErrorContains(t, err, "option 1 is nil")
}

// The options given for the connections configure the supervisor too,
// once for every layer; what WithParent sets as well must agree, and an
// Origin's Member, the supervisor's to set, is refused: none is ignored.
func TestSharedOptions(t *testing.T) {
	sys := snodoactor.Shared()
	other := snodoactor.NewQuietSystem(nil)
	t.Cleanup(other.Shutdown)
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	t.Cleanup(func() { sys.Root.Stop(owner) })

	cfg, err := newConfig([]Option{WithConnectOptions(snodo.WithActorSystem(other), snodo.WithOwner(owner),
		snodo.WithOrigin(snodo.Origin{Server: "files"}))})
	require.NoError(t, err)
	require.Same(t, other, cfg.system)
	require.Equal(t, owner, cfg.owner)
	require.Equal(t, snodo.Origin{Server: "files", Member: "files"}, cfg.origin())

	_, err = newConfig([]Option{WithConnectOptions(snodo.WithOrigin(snodo.Origin{Server: "files", Member: "files#1"}))})
	require.ErrorContains(t, err, "the supervisor names the member")

	// WithParent's actor is the owner and its system the system.
	errs := make(chan error, 2)
	parent := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if _, ok := ctx.Message().(*protoactor.Started); ok {
			_, err := newConfig([]Option{WithParent(ctx), WithConnectOptions(snodo.WithActorSystem(other))})
			errs <- err
			_, err = newConfig([]Option{WithParent(ctx), WithConnectOptions(snodo.WithOwner(owner))})
			errs <- err
		}
	}))
	t.Cleanup(func() { sys.Root.Stop(parent) })
	require.ErrorContains(t, <-errs, "another system than WithParent's")
	require.ErrorContains(t, <-errs, "both name the owner")
}
