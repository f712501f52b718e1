package telemetry

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func spanContext(t *testing.T, state string) trace.SpanContext {
	t.Helper()
	ts, err := trace.ParseTraceState(state)
	require.NoError(t, err)
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
}

// The members written by hand are exactly what the W3C propagator injects.
func TestTraceMembersMatchTheW3CPropagator(t *testing.T) {
	for _, state := range []string{"", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"} {
		ctx := trace.ContextWithSpanContext(context.Background(), spanContext(t, state))
		var got map[string]string
		require.NoError(t, json.Unmarshal(append(append([]byte("{"), AppendTraceMembers(nil, ctx)...), '}'), &got))
		want := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, want)
		assert.Equal(t, map[string]string(want), got)
		assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", got["traceparent"])
	}
}

func TestNoSpanNoMembersNoAllocation(t *testing.T) {
	ctx := context.Background()
	assert.Nil(t, AppendTraceMembers(nil, ctx))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = AppendTraceMembers(nil, ctx) }))
}

func TestOneAllocationWithASpan(t *testing.T) {
	ctx := trace.ContextWithSpanContext(context.Background(), spanContext(t, ""))
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = AppendTraceMembers(nil, ctx) }))
}

// Extract reads what a server put in params._meta; anything unusable
// leaves ctx alone.
func TestExtractFromMeta(t *testing.T) {
	params := json.RawMessage(`{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=1"},"x":1}`)
	sc := remoteSpanContext(params)
	assert.True(t, sc.IsValid())
	assert.True(t, sc.IsRemote())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	assert.Equal(t, "rojo=1", sc.TraceState().String())
	for _, bad := range []string{``, `[]`, `{"_meta":null}`, `{"_meta":{"traceparent":7}}`, `{"_meta":{"traceparent":"junk"}}`, `{"_meta":"x"}`} {
		assert.False(t, remoteSpanContext(json.RawMessage(bad)).IsValid(), bad)
	}
}

// remoteSpanContext is the span context a sender put in params._meta;
// invalid when there is none.
func remoteSpanContext(params json.RawMessage) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), params))
}
