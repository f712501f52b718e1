package testutil

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Metrics collects what reader holds now: each metric's data by its name
// (the last scope's, when two scopes record one name). A failed collect
// fails tb.
func Metrics(tb testing.TB, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	tb.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatalf("collecting metrics: %v", err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}
