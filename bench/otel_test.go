package bench_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/snodo/snodo"
)

// BenchmarkTelemetry is the cost of snodo's OpenTelemetry instrumentation
// on Client.Request against the fast server, one request in flight:
//
//   - off: no-op providers given: nothing is checked or counted, the
//     baseline;
//   - none: no provider set (the global no-op ones): must add nothing;
//   - propagate: no provider, but the caller's ctx holds a span, so
//     traceparent goes into params._meta;
//   - drop: an SDK tracer provider whose sampler drops everything (spans
//     are started, never recorded; the unsampled context still travels);
//   - record: an SDK provider sampling everything into a processor that
//     discards the spans (the SDK's own cost, no exporter);
//   - metrics: an SDK meter provider with a reader that is never
//     collected (every measurement recorded).
//
// go test -run '^$' -bench Telemetry -benchmem -count 6 | benchstat -
func BenchmarkTelemetry(b *testing.B) {
	parent := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	}))
	drop := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	record := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(discard{}))
	var meters metric.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	cases := []struct {
		name string
		ctx  context.Context
		opts []snodo.Option
	}{
		{"off", context.Background(), []snodo.Option{snodo.WithTracerProvider(tracenoop.NewTracerProvider()), snodo.WithMeterProvider(metricnoop.NewMeterProvider())}},
		{"none", context.Background(), nil},
		{"propagate", parent, nil},
		{"drop", context.Background(), []snodo.Option{snodo.WithTracerProvider(drop)}},
		{"record", context.Background(), []snodo.Option{snodo.WithTracerProvider(record)}},
		{"metrics", context.Background(), []snodo.Option{snodo.WithMeterProvider(meters)}},
	}
	for _, era := range []snodo.Era{snodo.EraModern, snodo.EraLegacy} {
		for _, tc := range cases {
			b.Run("era="+string(era)+"/otel="+tc.name, func(b *testing.B) {
				c, err := snodo.Connect(context.Background(), serverBin, []string{"-fast"}, append(tc.opts, snodo.WithEra(era))...)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
				for range 1000 { // warm up
					if _, err := c.Request(tc.ctx, "tools/call", params); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := c.Request(tc.ctx, "tools/call", params); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// discard is a span processor that drops every span: the SDK's recording
// cost without an exporter's.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
