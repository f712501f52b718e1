package remote

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/connection"
)

// An option meant for one kind cannot be given to the other: it does not
// have the other's option type, so passing it is a compile error rather
// than an option silently ignored. Options for both are both.
func TestOptionsOfOneKindAreNotTheOthers(t *testing.T) {
	hostOnly := map[string]HostOption{
		"Serve":         Serve("x", nil),
		"WithMaxHeld":   WithMaxHeld(1),
		"WithHostLabel": WithHostLabel("x"),
		"WithLogger":    WithLogger(slog.Default()),
	}
	for name, o := range hostOnly {
		_, ok := o.(ClientOption)
		assert.False(t, ok, "%s is a ClientOption", name)
	}
	clientOnly := map[string]ClientOption{
		"WithHeartbeat":      WithHeartbeat(time.Second),
		"WithConnectOptions": WithConnectOptions(snodo.WithTimeout(time.Second)),
	}
	for name, o := range clientOnly {
		_, ok := o.(HostOption)
		assert.False(t, ok, "%s is a HostOption", name)
	}
	for name, o := range map[string]Option{
		"WithPrefix":      WithPrefix("x"),
		"WithNATSOptions": WithNATSOptions(),
		"WithReconnect":   WithReconnect(Reconnect{}),
	} {
		var h HostOption = o
		var c ClientOption = o
		assert.NotNil(t, h, name)
		assert.NotNil(t, c, name)
	}
	_, err := clientConfig([]ClientOption{nil})
	assert.ErrorContains(t, err, "option 1 is nil")
	_, err = hostConfig([]HostOption{WithMaxHeld(2), nil})
	assert.ErrorContains(t, err, "option 2 is nil")
}

// The snodo options a remote client has reach its config, later ones
// winning; every other snodo option is refused, naming its place in the
// list (and the option, where snodo knows it), never ignored.
func TestConnectOptionsTakeWhatAppliesAndRefuseTheRest(t *testing.T) {
	sys := actor.Shared()
	logger := slog.New(slog.DiscardHandler)
	tp, mp := tracenoop.NewTracerProvider(), noop.NewMeterProvider()
	handler := func(context.Context, *snodo.ServerRequest) (any, error) { return nil, nil }
	cfg, err := clientConfig([]ClientOption{
		WithConnectOptions(snodo.WithTimeout(time.Second), snodo.WithMaxInputRounds(3)),
		WithConnectOptions(snodo.WithTimeout(-1), snodo.WithServerRequestHandler(handler),
			snodo.WithClientCapabilities(snodo.ClientCapabilities{}), snodo.WithTracerProvider(tp),
			snodo.WithMeterProvider(mp), snodo.WithActorSystem(sys), snodo.WithLogger(logger)),
	})
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), cfg.timeout, "the later WithTimeout wins")
	assert.Equal(t, 3, cfg.maxRounds)
	assert.NotNil(t, cfg.handler)
	assert.JSONEq(t, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`,
		string(cfg.meta["io.modelcontextprotocol/clientCapabilities"]), "capabilities declaring nothing are still given")
	assert.Equal(t, tp, cfg.tracers)
	assert.Equal(t, mp, cfg.meters)
	assert.Same(t, sys, cfg.system)
	assert.Same(t, logger, cfg.logger)

	cfg, err = clientConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, 60*time.Second, cfg.timeout)
	assert.Equal(t, 10, cfg.maxRounds)
	assert.Nil(t, cfg.meta, "no capabilities given: the host's own apply")

	dir := t.TempDir()
	for name, o := range map[string]snodo.Option{
		"WithEnv":           snodo.WithEnv("A", "1"),
		"WithoutEnv":        snodo.WithoutEnv("A"),
		"WithCleanEnv":      snodo.WithCleanEnv(),
		"WithDir":           snodo.WithDir(dir),
		"WithStderr":        snodo.WithStderr(os.Stderr),
		"WithShutdownGrace": snodo.WithShutdownGrace(time.Second),
		"WithHTTPClient":    snodo.WithHTTPClient(http.DefaultClient),
		"WithHTTPHeader":    snodo.WithHTTPHeader("X-Key", "v"),
		"":                  snodo.WithMaxLineBytes(1 << 20),
	} {
		_, err := clientConfig([]ClientOption{WithConnectOptions(snodo.WithTimeout(time.Second), o)})
		require.Error(t, err, name)
		assert.ErrorContains(t, err, "remote: WithConnectOptions: option 2")
		assert.ErrorContains(t, err, name)
		assert.ErrorContains(t, err, "does not apply to a remote client")
	}
	for name, o := range map[string]snodo.Option{
		"WithMaxServerRequests": snodo.WithMaxServerRequests(2),
		"WithClientInfo":        snodo.WithClientInfo("me", "1"),
		"WithProbeTimeout":      snodo.WithProbeTimeout(time.Second),
		"WithOwner":             snodo.WithOwner(sys.NewLocalPID("x")),
		"WithWireTrace":         snodo.WithWireTrace(func(connection.Direction, []byte) {}),
	} {
		_, err := clientConfig([]ClientOption{WithConnectOptions(o)})
		assert.ErrorContains(t, err, "option 1 does not apply to a remote client", name)
	}
	_, err = clientConfig([]ClientOption{WithConnectOptions(snodo.WithTimeout(0))})
	assert.ErrorContains(t, err, "zero timeout", "an invalid option is refused with its own error")
	_, err = clientConfig([]ClientOption{WithConnectOptions(nil)})
	assert.ErrorContains(t, err, "option 1 is nil")
}
