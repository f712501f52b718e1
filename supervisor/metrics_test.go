package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

func TestRestartsAndGiveUpsAreCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	_, err := Connect(t.Context(), snodo.Command("sh", "-c", "read line; exit 3"),
		fast, WithIntensity(2, 10*time.Second), WithConnectOptions(snodo.WithMeterProvider(mp)))
	require.ErrorIs(t, err, ErrGaveUp)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range sum.DataPoints {
					got[m.Name] += p.Value
					v, _ := p.Attributes.Value("snodo.server.command")
					assert.Equal(t, "sh", v.AsString())
				}
			}
		}
	}
	assert.EqualValues(t, 2, got["snodo.supervisor.restarts"])
	assert.EqualValues(t, 1, got["snodo.supervisor.give_ups"])
}

// A meter provider given to the supervisor once reaches its connections:
// their request durations are recorded with it too.
func TestMeterProviderReachesTheConnections(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	cmd, args := testutil.Server(t)
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, WithConnectOptions(snodo.WithMeterProvider(mp)))
	require.NoError(t, err)
	_, err = c.ListTools(t.Context())
	require.NoError(t, err)
	require.NoError(t, c.Close())
	<-c.Done()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
		}
	}
	assert.Contains(t, names, "mcp.client.operation.duration")
}
