package remote

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// meterReader is a meter provider recording into a manual reader.
func meterReader(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, reader
}

// A remote subscription records the metrics a local one records, by the
// same code, with the attributes of the remote client's other connection
// metrics (network.transport tcp, snodo.server.name): the queue depth as
// each event is queued on Events, and one overflow when it ends with
// snodo.ErrSubscriptionQueueFull. A subscription ended otherwise is no overflow.
func TestRemoteListenIsMeasured(t *testing.T) {
	e := natsServer(t)
	host(t, e, "measured", 1)
	mp, reader := meterReader(t)
	c := client(t, e, "measured", WithConnectOptions(snodo.WithMeterProvider(mp)), WithHeartbeat(100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)

	// Read: one sample per event (0 when the reader took it at once).
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	require.NotNil(t, hostedOf(sub).trace, "metrics on, tracing off: the subscription is measured")
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 2})
	require.NoError(t, err)
	for range 2 {
		testutil.Receive(t, sub.Events(), 5*time.Second, "an event")
	}
	require.NoError(t, sub.Close())

	// Not read: two events queued (depths 1 and 2), the third overflows.
	sub, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true}, snodo.MaxQueued(2, 0))
	require.NoError(t, err)
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 3})
	require.NoError(t, err)
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionQueueFull)

	m := testutil.Metrics(t, reader)
	depth, ok := m["snodo.client.subscription.queue.depth"].(metricdata.Histogram[int64])
	require.True(t, ok, "queue depth recorded: %v", m)
	require.Len(t, depth.DataPoints, 1, "one series: the client's")
	dp := depth.DataPoints[0]
	assert.EqualValues(t, 4, dp.Count, "one sample per queued event")
	maxDepth, _ := dp.Max.Value()
	assert.EqualValues(t, 2, maxDepth)
	want := attribute.NewSet(
		attribute.String("network.transport", "tcp"),
		attribute.String("snodo.server.name", "measured"))
	assert.True(t, dp.Attributes.Equals(&want), "attributes %v", dp.Attributes.ToSlice())

	overflows, ok := m["snodo.client.subscription.overflows"].(metricdata.Sum[int64])
	require.True(t, ok, "overflows counted: %v", m)
	require.Len(t, overflows.DataPoints, 1)
	assert.EqualValues(t, 1, overflows.DataPoints[0].Value, "once, for the subscription that ended with ErrQueueFull")
	assert.True(t, overflows.DataPoints[0].Attributes.Equals(&want), "attributes %v", overflows.DataPoints[0].Attributes.ToSlice())

	// The same attributes as the client's requests in flight.
	active, ok := m["snodo.client.requests.active"].(metricdata.Sum[int64])
	require.True(t, ok)
	require.NotEmpty(t, active.DataPoints)
	assert.True(t, active.DataPoints[0].Attributes.Equals(&want))
}

// With metrics and tracing off (no provider: the global no-op ones), a
// remote subscription has no trace, and its per-event recording costs no
// allocation; with metrics on, the queue depth costs none either (the
// attribute set is built once per client).
func TestRemoteListenMetricsAllocation(t *testing.T) {
	e := natsServer(t)
	host(t, e, "plain", 1)
	ctx := ctxFor(t, 20*time.Second)
	ev := snodo.Event{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}

	off := client(t, e, "plain", WithHeartbeat(100*time.Millisecond))
	sub, err := off.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	require.Nil(t, hostedOf(sub).trace, "no provider: nothing to record")
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		traceQueued(hostedOf(sub).trace, 1)
		hostedOf(sub).traceEvent(ev)
	}))

	mp, _ := meterReader(t)
	on := client(t, e, "plain", WithConnectOptions(snodo.WithMeterProvider(mp)), WithHeartbeat(100*time.Millisecond))
	measured, err := on.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer measured.Close()
	require.NotNil(t, hostedOf(measured).trace)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		traceQueued(hostedOf(measured).trace, 1)
		hostedOf(measured).traceEvent(ev)
	}), "metrics on, tracing off")
}

// When Listen's ctx ends before the host acknowledged the subscription,
// the owner left: Listen fails with an error wrapping snodo.ErrOwnerExited
// and the ctx's cause, and the span has no error, as for a local Listen
// (TestListenOwnerLeavingBeforeAckIsNoError in the root package).
func TestRemoteListenOwnerLeavingBeforeAckIsNoError(t *testing.T) {
	e := natsServer(t)
	hostWith(t, e, "silent", 1, []snodo.Option{snodo.WithTimeout(2 * time.Second)}, "-silent-listen")
	tp, rec := recorder(t)
	c := client(t, e, "silent", WithConnectOptions(snodo.WithTracerProvider(tp)))
	// Another subscriber of the listen subject sees the request as the
	// host does: once it has, Listen waits for the acknowledgement.
	sent := make(chan struct{}, 1)
	nc := conn(t, e)
	_, err := nc.Subscribe(subjectsOf(defaultPrefix, "silent").listen, func(*nats.Msg) {
		select {
		case sent <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	owned, cancel := context.WithCancel(ctxFor(t, 20*time.Second))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Listen(owned, snodo.Filter{ToolsListChanged: true})
		done <- err
	}()
	testutil.Receive(t, sent, 10*time.Second, "the listen request")
	cancel()
	err = testutil.Receive(t, done, 10*time.Second, "Listen's return")
	require.ErrorIs(t, err, snodo.ErrOwnerExited)
	require.ErrorIs(t, err, context.Canceled)

	spans := ended(rec, "subscriptions/listen")
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Unset, spans[0].Status().Code, "the owner leaving is no error")
	assert.NotContains(t, attrsOf(spans[0]), "error.type")

	// A ctx already done: nothing is sent, and the error is the same.
	_, err = c.Listen(owned, snodo.Filter{ToolsListChanged: true})
	require.ErrorIs(t, err, snodo.ErrOwnerExited)
	require.ErrorIs(t, err, context.Canceled)
}
