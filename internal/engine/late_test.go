package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/snodo/snodo/internal/telemetry"
	"github.com/snodo/snodo/test/testutil"
)

// What the server still sends for a request the client ended itself — a
// stream whose callback panicked, a request whose ctx was cancelled — is
// dropped the same way: counted as ended_by_client, not logged as for an
// unknown subscription or a request that never asked for progress (both
// go through abandon, which remembers the request). Notifications for a
// request never made are still logged and counted as unknown.
func TestLateNotificationsForRequestsTheClientEnded(t *testing.T) {
	logs := &testutil.LogRecorder{}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	cfg := Config{Logger: logs.Logger()}
	cfg.Metrics = telemetry.New(nil, mp).ForConn("testserver")
	c := start(t, cfg)

	// A Stream callback that panics on the first of two notifications:
	// the second comes while its caller gives the request up.
	ids := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "test/sleep", map[string]any{"ms": 60000, "honorCancel": true}, &CallOptions{
			Sent:              func(id int64) { ids <- id },
			moduleCallOptions: moduleCallOptions{Stream: func(string, json.RawMessage) { panic("stream: boom") }},
		})
		done <- err
	}()
	panicked := testutil.Receive(t, ids, 10*time.Second, "the streaming request's ID")
	mustCall(t, c, "test/emit", map[string]any{"method": "notifications/event", "rawSubscriptionId": panicked, "count": 2})
	require.ErrorIs(t, testutil.Receive(t, done, 10*time.Second, "the end of the request whose Stream panicked"), errStreamPanicked)
	// The server keeps sending for it (it had not seen the cancel yet).
	mustCall(t, c, "test/emit", map[string]any{"method": "notifications/event", "rawSubscriptionId": panicked, "count": 3})

	// A streaming request with progress whose ctx is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 60000, "honorCancel": true}, &CallOptions{
			Sent:              func(id int64) { ids <- id },
			moduleCallOptions: moduleCallOptions{Stream: func(string, json.RawMessage) {}},
			OnProgress:        func(Progress) {},
		})
		done <- err
	}()
	cancelled := testutil.Receive(t, ids, 10*time.Second, "the cancelled request's ID")
	cancel()
	require.ErrorIs(t, testutil.Receive(t, done, 10*time.Second, "the cancelled request's end"), context.Canceled)
	mustCall(t, c, "test/emit", map[string]any{"method": "notifications/event", "rawSubscriptionId": cancelled, "count": 2})
	mustCall(t, c, "test/notify", map[string]any{"method": "notifications/progress", "params": map[string]any{"progressToken": cancelled, "progress": 1}})

	// A request never made.
	mustCall(t, c, "test/emit", map[string]any{"method": "notifications/event", "rawSubscriptionId": 999999})
	mustCall(t, c, "test/notify", map[string]any{"method": "notifications/progress", "params": map[string]any{"progressToken": 999998, "progress": 1}})

	dropped := droppedByReason(t, reader)
	assert.EqualValues(t, 1+3+2+1, dropped[dropEndedByClient], "the late notifications of both requests: %v", dropped)
	assert.EqualValues(t, 1, dropped["unknown_subscription"], "%v", dropped)
	assert.EqualValues(t, 1, dropped["unmatched_progress"], "%v", dropped)
	assert.Equal(t, 1, logs.Count("unknown subscription"), "only the request never made is logged: %v", logs.Messages())
	assert.Equal(t, 1, logs.Count("dropped progress for no request that asked for it"), "%v", logs.Messages())
	assert.Zero(t, c.inFlight())
}

// droppedByReason sums snodo.client.notifications.dropped by its reason.
func droppedByReason(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "snodo.client.notifications.dropped" {
				for _, p := range sum.DataPoints {
					reason, _ := p.Attributes.Value(attribute.Key(telemetry.AttrDropReason))
					out[reason.Emit()] += p.Value
				}
			}
		}
	}
	return out
}
