package telemetry

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// globalPackage is where the OpenTelemetry API keeps its delegating
// defaults: the tracer provider, meter provider and propagator that
// otel.Get… return until a program sets its own. Once a program sets one,
// otel.Get… returns that one (of another type) for ever; a tracer or
// meter taken from the delegating default before then forwards to it.
const globalPackage = "go.opentelemetry.io/otel/internal/global"

// isGlobalDefault reports whether v is one of the API's delegating
// defaults, by the package of its type. It captures no type: a type
// captured while this package initialises would be wrong for good when a
// package initialised earlier (one that does not import snodo, whose
// init may run first) had already set a global provider, and snodo would
// then take the program's provider for the default and never record. Its
// verdict, a function of v's type alone, is remembered for the last type
// seen at each call site (memo): asked on every request, the look-up of
// the type's package would cost more than the rest of an untraced
// request's telemetry.
func isGlobalDefault(v any, memo *atomic.Pointer[typeVerdict]) bool {
	t := reflect.TypeOf(v)
	if t == nil {
		return false
	}
	if m := memo.Load(); m != nil && m.t == t {
		return m.is
	}
	is := t.Kind() == reflect.Pointer && t.Elem().PkgPath() == globalPackage
	memo.Store(&typeVerdict{t: t, is: is})
	return is
}

// typeVerdict is isGlobalDefault's verdict on type t.
type typeVerdict struct {
	t  reflect.Type
	is bool
}

// The memos of isGlobalDefault's call sites, one per kind of provider so
// that they do not take turns evicting each other. A memo only saves a
// look-up: its verdict is the same whoever computes it.
var tracerMemo, meterMemo, propagatorMemo atomic.Pointer[typeVerdict]

// apiNoopTracerProviderType is the type of trace.NewNoopTracerProvider,
// the trace package's own no-op (deprecated for trace/noop, still in
// use): given it, a client records nothing and starts no span, as with
// trace/noop, rather than making a non-recording span per request.
var apiNoopTracerProviderType = reflect.TypeOf(trace.NewNoopTracerProvider()) //nolint:staticcheck // told apart, not used

// Telemetry is one client's tracer and instruments. A nil *Telemetry
// records nothing.
type Telemetry struct {
	tracer   trace.Tracer
	client   []trace.SpanStartOption // SpanKindClient, made once: made per span, it costs two allocations
	tracing  state
	meters   *Meters
	metering state
}

// state says whether a provider records: always, never, or whatever the
// global provider does at the time.
type state uint8

const (
	followGlobal state = iota
	on
	off
)

// New resolves the providers: tp and mp when given (nil: the global
// ones, followed as they change).
func New(tp trace.TracerProvider, mp metric.MeterProvider) *Telemetry {
	t := &Telemetry{client: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}}
	switch tp.(type) {
	case nil:
		tp, t.tracing = otel.GetTracerProvider(), followGlobal
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		t.tracing = off
	default:
		t.tracing = on
		if reflect.TypeOf(tp) == apiNoopTracerProviderType { // the older idiom for "no tracing"
			t.tracing = off
		}
	}
	t.tracer = tp.Tracer(ScopeName)
	switch mp.(type) {
	case nil:
		mp, t.metering = otel.GetMeterProvider(), followGlobal
	case metricnoop.MeterProvider, *metricnoop.MeterProvider:
		t.metering = off
	default:
		t.metering = on
	}
	switch {
	case t.metering == followGlobal && isGlobalDefault(mp, &meterMemo):
		t.meters = globalMeters()
	case t.metering != off:
		t.meters = meters(mp)
	}
	return t
}

// globalMeters is the one set of instruments taken from the global meter
// provider while it is still the delegating default, shared by every
// client that follows it. That default keeps each instrument made from
// it, to forward it to the provider a program sets later: instruments
// made per client would pile up there, one set per Connect, for the
// life of the program. Shared, they forward all the same.
var globalMeters = sync.OnceValue(func() *Meters { return meters(otel.GetMeterProvider()) })

// Tracing reports whether spans may be recorded: a tracer provider was
// given (not a no-op one), or a global one has been set. When false,
// callers start no span at all, so the default costs nothing.
func (t *Telemetry) Tracing() bool {
	return t != nil && t.tracing.records(func() bool {
		return !isGlobalDefault(otel.GetTracerProvider(), &tracerMemo)
	})
}

// Metering reports whether measurements may be recorded, as Tracing does
// for spans.
func (t *Telemetry) Metering() bool {
	return t != nil && t.metering.records(func() bool {
		return !isGlobalDefault(otel.GetMeterProvider(), &meterMemo)
	})
}

// records resolves s now; globalSet (asked only when s follows the
// global provider) reports whether a global provider has been set.
func (s state) records(globalSet func() bool) bool {
	switch s {
	case on:
		return true
	case off:
		return false
	}
	return globalSet()
}

// Tracer is the client's tracer; use it only when Tracing is true.
func (t *Telemetry) Tracer() trace.Tracer { return t.tracer }

// StartClient starts a CLIENT span named name, a child of the span in
// ctx, as Tracer().Start with trace.WithSpanKind(trace.SpanKindClient)
// would, without allocating the option. Use it only when Tracing is true.
func (t *Telemetry) StartClient(ctx context.Context, name string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, t.client...)
}
