package telemetry

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// testMemo is shared by every isDefault of the tests, whatever the type:
// a memo that took turns between types must still give each its verdict.
var testMemo atomic.Pointer[typeVerdict]

// isDefault is isGlobalDefault through one memo shared by all types.
func isDefault(v any) bool { return isGlobalDefault(v, &testMemo) }

// The API's delegating defaults are told from a program's providers by
// their type's package, not by a type captured while snodo initialises:
// a program whose own package sets the global providers in an init that
// runs before snodo's would otherwise have its provider taken for the
// default, and snodo would never record.
func TestGlobalDefaultsAreToldByTheirPackage(t *testing.T) {
	if isDefault(otel.GetTracerProvider()) != isDefault(otel.GetMeterProvider()) {
		t.Skip("a global provider is set")
	}
	if !isDefault(otel.GetTracerProvider()) {
		t.Skip("a global provider is set")
	}
	assert.True(t, isDefault(otel.GetMeterProvider()), "the default meter provider")
	assert.True(t, isDefault(otel.GetTextMapPropagator()), "the default propagator")

	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider()
	for name, v := range map[string]any{
		"sdk tracer provider": tp, "sdk meter provider": mp,
		"noop tracer provider": tracenoop.NewTracerProvider(), "noop meter provider": metricnoop.NewMeterProvider(),
		"propagator": propagation.TraceContext{}, "nil": nil,
	} {
		assert.False(t, isDefault(v), name)
	}
	// Once a tracer provider is given, it records, whenever the global
	// one was set: nothing is remembered from the time snodo loaded.
	assert.True(t, New(tp, mp).Tracing())
	assert.True(t, New(tp, mp).Metering())
	assert.False(t, New(nil, nil).Tracing(), "the default global records nothing")
	assert.False(t, New(trace.NewNoopTracerProvider(), nil).Tracing(), "the trace package's own no-op: nothing to record") //nolint:staticcheck // the older idiom, still in use
	assert.False(t, New(tracenoop.NewTracerProvider(), nil).Tracing())
}
