package remote

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo"
)

func TestTraceContextCrossesTheHop(t *testing.T) {
	e := natsServer(t)
	hostRec := tracetest.NewSpanRecorder()
	hostTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(hostRec))
	t.Cleanup(func() { _ = hostTP.Shutdown(context.Background()) })
	hostWith(t, e, "traced", 1, []snodo.Option{snodo.WithTracerProvider(hostTP)})

	callerRec := tracetest.NewSpanRecorder()
	callerTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(callerRec))
	t.Cleanup(func() { _ = callerTP.Shutdown(context.Background()) })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c := client(t, e, "traced", WithConnectOptions(snodo.WithTracerProvider(callerTP)), WithConnectOptions(snodo.WithMeterProvider(mp)))

	ctx, span := callerTP.Tracer("test").Start(ctxFor(t, 20*time.Second), "agent step")
	_, err := c.CallTool(ctx, "echo", map[string]any{"message": "hi"})
	span.End()
	require.NoError(t, err)

	// The caller's side: one CLIENT span for the call, child of the
	// caller's span, with the same name and attributes as a local one.
	var call sdktrace.ReadOnlySpan
	for _, s := range callerRec.Ended() {
		if s.Name() == "tools/call echo" {
			call = s
		}
	}
	require.NotNil(t, call, "the remote call has a client span on the caller's side")
	assert.Equal(t, trace.SpanKindClient, call.SpanKind())
	assert.Equal(t, span.SpanContext().SpanID(), call.Parent().SpanID())
	attrs := map[attribute.Key]string{}
	for _, kv := range call.Attributes() {
		attrs[kv.Key] = kv.Value.Emit()
	}
	assert.Equal(t, "tools/call", attrs["mcp.method.name"])
	assert.Equal(t, "echo", attrs["gen_ai.tool.name"])
	assert.Equal(t, "tcp", attrs["network.transport"])

	// The host's side: the member's span is a child of the caller's
	// client span, in the same trace.
	var hostCall sdktrace.ReadOnlySpan
	for _, s := range hostRec.Ended() {
		if s.Name() == "tools/call echo" {
			hostCall = s
		}
	}
	require.NotNil(t, hostCall)
	assert.Equal(t, call.SpanContext().SpanID(), hostCall.Parent().SpanID(), "the host's span is a child of the caller's client span")
	assert.Equal(t, span.SpanContext().TraceID(), hostCall.SpanContext().TraceID())

	// The operation is measured as a local one is.
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "mcp.client.operation.duration" {
				for _, dp := range h.DataPoints {
					if v, _ := dp.Attributes.Value("network.transport"); v.AsString() == "tcp" {
						n += dp.Count
					}
				}
			}
		}
	}
	assert.Equal(t, uint64(1), n, "one mcp.client.operation.duration for the remote call")
}

// With a global propagator set, what it carries (baggage here) crosses
// the hop too: the NATS headers use the library's one propagator.
func TestGlobalPropagatorCrossesTheHop(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	e := natsServer(t)
	c := client(t, e, "bag")
	nc := conn(t, e)
	got := make(chan nats.Header, 1)
	_, err := nc.Subscribe(subjectsOf(defaultPrefix, "bag").call, func(m *nats.Msg) {
		got <- m.Header
		_ = m.Respond(nil)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	m, err := baggage.NewMember("tenant", "acme")
	require.NoError(t, err)
	b, err := baggage.New(m)
	require.NoError(t, err)
	ctx := baggage.ContextWithBaggage(ctxFor(t, 5*time.Second), b)
	_, _ = c.Request(ctx, "test/echo", nil, snodo.Timeout(time.Second))
	select {
	case h := <-got:
		assert.Equal(t, "tenant=acme", h.Get("baggage"))
	case <-ctx.Done():
		t.Fatal("no call arrived")
	}
}

func TestLegacyServerRequestsAnsweredByHost(t *testing.T) {
	e := natsServer(t)
	answer := func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "the host"}}, nil
	}
	hostWith(t, e, "legacy", 1, []snodo.Option{snodo.WithServerRequestHandler(answer), snodo.WithEra(snodo.EraLegacy)}, "-era", "legacy")
	called := false
	c := client(t, e, "legacy", WithConnectOptions(snodo.WithServerRequestHandler(func(context.Context, *snodo.ServerRequest) (any, error) {
		called = true
		return nil, nil
	})))
	res, err := c.CallTool(ctxFor(t, 20*time.Second), "ask", map[string]any{"rounds": 1})
	require.NoError(t, err)
	assert.Equal(t, "Hello, the host!", res.Text())
	assert.False(t, called, "a legacy server's requests never reach the caller")
	assert.Equal(t, snodo.EraLegacy, c.Era())
}

func TestHostSideEndsTellWhy(t *testing.T) {
	e := natsServer(t)
	h := host(t, e, "subs", 1)
	c := client(t, e, "subs", WithHeartbeat(100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)

	// The MCP server ends it.
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	raw, err := c.Request(ctx, "test/subscriptions", nil)
	require.NoError(t, err)
	var open struct{ Open []json.RawMessage }
	require.NoError(t, json.Unmarshal(raw, &open))
	require.Len(t, open.Open, 1)
	_, err = c.Request(ctx, "test/endSubscription", map[string]any{"subscription": open.Open[0], "mode": "teardown"})
	require.NoError(t, err)
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), ErrHostEnded)
	assert.Contains(t, sub.Err().Error(), "tore the subscription down")
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionTeardown, "as a local subscription's Err")

	// The host drains.
	sub, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(ctx))
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), ErrHostEnded)
	assert.Contains(t, sub.Err().Error(), "draining")
	require.ErrorIs(t, sub.Err(), snodo.ErrConnectionClosed)
}
