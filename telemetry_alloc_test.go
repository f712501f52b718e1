package snodo

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/test/testutil"
)

// With no provider set (the global no-op ones), the client's request path
// allocates nothing more than the connection's own.
func TestTelemetryOffAddsNoAllocation(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	cmd, args := testutil.Server(t, "-fast")
	for _, era := range []Era{EraModern, EraLegacy} {
		c, err := Connect(t.Context(), cmd, args, WithEra(era))
		require.NoError(t, err)
		params := json.RawMessage(`{"a":1}`)
		ctx := context.Background()
		conn := func() {
			_, err := c.conn.Request(ctx, "test/echo", params, &engine.CallOptions{Meta: c.encodedMeta()})
			require.NoError(t, err)
		}
		client := func() {
			_, err := c.Request(ctx, "test/echo", params)
			require.NoError(t, err)
		}
		for range 100 { // warm the pools
			conn()
			client()
		}
		base := testing.AllocsPerRun(2000, conn)
		got := testing.AllocsPerRun(2000, client)
		require.LessOrEqual(t, got, base, "%s: Client.Request allocates %.2f per call, the connection %.2f", era, got, base)
		require.NoError(t, c.Close())
		<-c.Done()
	}
}

// With telemetry on, a request costs a fixed number of allocations more
// than with it off, whatever its ctx: one that can be cancelled, or has a
// deadline, costs no more than context.Background() (the measurements'
// ctx is detached from the caller's cancellation inside the op, at no
// allocation; it cost 2 more before). Metrics on (an SDK MeterProvider,
// tracing off): at most metricsExtra more (13 with a background ctx, 15
// with a cancellable one, before). Tracing on with a sampler that drops
// everything (metrics off): at most droppedExtra more (14 before): the
// op, its connection.Sent hook, the target read from params, the span's name, the
// SDK's non-recording span and its ctx, the unsampled trace context in
// _meta.
func TestTelemetryOnAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	const metricsExtra, droppedExtra = 8, 8
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	noTracing := tracenoop.NewTracerProvider()
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline, cancelDeadline := context.WithTimeout(context.Background(), time.Hour)
	defer cancelDeadline()
	ctxs := []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancellable", cancellable}, {"deadline", deadline}}
	configs := []struct {
		name  string
		opts  []Option
		extra float64
	}{
		{"off", []Option{WithTracerProvider(noTracing), WithMeterProvider(metricnoop.NewMeterProvider())}, 0},
		{"metrics", []Option{WithTracerProvider(noTracing), WithMeterProvider(mp)}, metricsExtra},
		{"dropping sampler", []Option{WithTracerProvider(tp), WithMeterProvider(metricnoop.NewMeterProvider())}, droppedExtra},
	}
	cmd, args := testutil.Server(t, "-fast")
	params := json.RawMessage(`{"name":"echo","arguments":{"message":"hi"}}`)
	for _, era := range []Era{EraModern, EraLegacy} {
		off := map[string]float64{}
		for _, cfg := range configs {
			c, err := Connect(t.Context(), cmd, args, append([]Option{WithEra(era)}, cfg.opts...)...)
			require.NoError(t, err)
			for _, x := range ctxs {
				call := func() {
					_, err := c.Request(x.ctx, "tools/call", params)
					require.NoError(t, err)
				}
				for range 100 { // warm the pools
					call()
				}
				// The least of three runs: a goroutine left by an earlier
				// test may allocate during one.
				got := testing.AllocsPerRun(500, call)
				for range 2 {
					got = min(got, testing.AllocsPerRun(500, call))
				}
				if cfg.name == "off" {
					off[x.name] = got
					continue
				}
				t.Logf("%s, %s, %s ctx: %.0f allocations per request, %.0f with telemetry off", era, cfg.name, x.name, got, off[x.name])
				assert.LessOrEqual(t, got, off[x.name]+cfg.extra, "%s, %s, %s ctx", era, cfg.name, x.name)
				assert.LessOrEqual(t, got, off["background"]+cfg.extra, "%s, %s: a %s ctx costs no more than Background", era, cfg.name, x.name)
			}
			require.NoError(t, c.Close())
			<-c.Done()
		}
	}
	m := testutil.Metrics(t, reader)
	require.Contains(t, m, "mcp.client.operation.duration", "the requests were measured")
}

// A provider whose sampler drops everything still propagates the
// (unsampled) context but records nothing: measured in bench/, checked
// here to work.
func TestTelemetryDroppingSamplerRecordsNothing(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	cmd, args := testutil.Server(t, "-fast")
	c, err := Connect(t.Context(), cmd, args, WithTracerProvider(tp))
	require.NoError(t, err)
	defer func() { _ = c.Close(); <-c.Done() }()
	_, err = c.Request(t.Context(), "test/echo", json.RawMessage(`{}`))
	require.NoError(t, err)
}

// Instrument, with no provider set, adds no allocation to the requests
// of the requester it wraps.
func TestInstrumentOffAddsNoAllocation(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	cmd, args := testutil.Server(t, "-fast")
	c, err := Connect(t.Context(), cmd, args)
	require.NoError(t, err)
	defer func() { _ = c.Close(); <-c.Done() }()
	direct := opaque(c) // both through the interface, as Calls calls them
	wrapped := instrument(c, nil, nil, "tcp", "test")
	params := json.RawMessage(`{"a":1}`)
	ctx := context.Background()
	opt := Timeout(time.Minute)
	plain := func() {
		_, err := direct.Request(ctx, "test/echo", params, opt)
		require.NoError(t, err)
	}
	instrumented := func() {
		_, err := wrapped.Request(ctx, "test/echo", params, opt)
		require.NoError(t, err)
	}
	for range 100 {
		plain()
		instrumented()
	}
	// The least of three runs each: a goroutine left by an earlier test
	// may allocate during one.
	base, got := testing.AllocsPerRun(1000, plain), testing.AllocsPerRun(1000, instrumented)
	for range 2 {
		base = min(base, testing.AllocsPerRun(1000, plain))
		got = min(got, testing.AllocsPerRun(1000, instrumented))
	}
	require.LessOrEqual(t, got, base, "Instrument(…).Request allocates %.2f per call, the Client %.2f", got, base)
}

// opaque hides r's type from the compiler, so that calls through it are
// interface calls, as Calls makes them.
//
//go:noinline
func opaque(r requester) requester { return r }

// TraceSubscription traces and measures only through a requester made
// by Instrument, and only when one of its providers records; with none,
// the trace is nil and its methods cost no allocation.
func TestTraceSubscriptionOffIsNil(t *testing.T) {
	ctx := context.Background()
	got, tr := traceSubscription(ctx, instrument(nil, nil, nil, "tcp", "test"))
	require.Nil(t, tr, "no provider: nothing to record")
	require.Equal(t, ctx, got)
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	_, tr = traceSubscription(ctx, opaque(noRequester{}))
	require.Nil(t, tr, "not Instrument's: nothing to record through it")
	_, tr = traceSubscription(ctx, instrument(nil, tp, nil, "tcp", "test"))
	require.NotNil(t, tr)
	tr.End(nil)
	mp := sdkmetric.NewMeterProvider()
	defer func() { _ = mp.Shutdown(context.Background()) }()
	got, tr = traceSubscription(ctx, instrument(nil, nil, mp, "tcp", "test"))
	require.NotNil(t, tr, "metrics alone: measured, not traced")
	require.Equal(t, ctx, got, "no span: ctx as it was")
	tr.End(ErrSubscriptionQueueFull)

	var off *subscriptionTrace
	ev := Event{Method: methodToolsListChanged, Params: json.RawMessage(`{}`)}
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		off.Queued(1)
		off.Event(ev)
	}))
	off.End(ErrSubscriptionQueueFull) // nothing to end
}
