package remote

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// recorder is a tracer provider recording into a span recorder.
func recorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// ended are the ended spans of rec named name.
func ended(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// A remote Listen has the CLIENT span a local one has, by the same code:
// from Listen until the subscription ends, a child of the span in
// Listen's ctx, with a remote client's attributes; the host's own
// subscriptions/listen span is its child. Each event is a SERVER span,
// child of the listen span, or of the server's span (linked to the
// listen span) when its _meta carries one.
func TestRemoteListenIsTraced(t *testing.T) {
	e := natsServer(t)
	hostTP, hostRec := recorder(t)
	hostWith(t, e, "traced", 1, []snodo.Option{snodo.WithTracerProvider(hostTP)})
	callerTP, callerRec := recorder(t)
	c := client(t, e, "traced", WithConnectOptions(snodo.WithTracerProvider(callerTP)), WithHeartbeat(100*time.Millisecond))

	ctx, parent := callerTP.Tracer("test").Start(ctxFor(t, 20*time.Second), "agent step")
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	assert.Empty(t, ended(callerRec, "subscriptions/listen"), "the span lasts as long as the subscription")
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	const serverTrace, serverSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed",
		"params": map[string]any{"_meta": map[string]any{"traceparent": "00-" + serverTrace + "-" + serverSpan + "-01"}}})
	require.NoError(t, err)
	for range 2 {
		testutil.Receive(t, sub.Events(), 5*time.Second, "an event")
	}
	require.NoError(t, sub.Close())
	parent.End()

	listen := ended(callerRec, "subscriptions/listen")
	require.Len(t, listen, 1, "ended once Close returned")
	l := listen[0]
	assert.Equal(t, trace.SpanKindClient, l.SpanKind())
	assert.Equal(t, parent.SpanContext().SpanID(), l.Parent().SpanID())
	assert.Equal(t, codes.Unset, l.Status().Code, "Close is a clean end")
	a := attrsOf(l)
	assert.Equal(t, "subscriptions/listen", a["mcp.method.name"])
	assert.Equal(t, "tcp", a["network.transport"])
	assert.NotContains(t, a, "jsonrpc.request.id", "the host's span has the ID")
	assert.NotContains(t, a, "mcp.protocol.version", "the version is the host connection's")
	assert.NotContains(t, a, "error.type")

	events := ended(callerRec, "notifications/tools/list_changed")
	require.Len(t, events, 2)
	plain, joined := events[0], events[1]
	for _, ev := range events {
		assert.Equal(t, trace.SpanKindServer, ev.SpanKind(), "a notification the peer initiated")
		a := attrsOf(ev)
		assert.Equal(t, "notifications/tools/list_changed", a["mcp.method.name"])
		assert.Equal(t, "tcp", a["network.transport"])
		assert.NotContains(t, a, "jsonrpc.request.id")
		assert.NotContains(t, a, "mcp.protocol.version")
	}
	assert.Equal(t, l.SpanContext().SpanID(), plain.Parent().SpanID(), "no context in _meta: the listen span is the parent")
	assert.Empty(t, plain.Links())
	assert.Equal(t, serverTrace, joined.SpanContext().TraceID().String())
	assert.Equal(t, serverSpan, joined.Parent().SpanID().String())
	assert.True(t, joined.Parent().IsRemote())
	require.Len(t, joined.Links(), 1)
	assert.Equal(t, l.SpanContext().SpanID(), joined.Links()[0].SpanContext.SpanID(), "the listen span, linked")

	// The host's subscription is a child of the caller's, in its trace.
	testutil.Eventually(t, func() bool { return len(ended(hostRec, "subscriptions/listen")) == 1 },
		5*time.Second, "the host's subscriptions/listen span did not end")
	h := ended(hostRec, "subscriptions/listen")[0]
	assert.Equal(t, l.SpanContext().SpanID(), h.Parent().SpanID(), "the host's listen span is a child of the caller's")
	assert.Equal(t, parent.SpanContext().TraceID(), h.SpanContext().TraceID())
}

// The listen span ends with the subscription's reason, as a local one
// does: a graceful end and the owner leaving are no error; the server
// tearing it down is server_teardown, an overflow queue_full; the host
// draining ends the connection (connection_closed); a Listen that fails
// ends its span too.
func TestRemoteListenSpanEndsWithItsReason(t *testing.T) {
	e := natsServer(t)
	h := host(t, e, "subs", 1)
	tp, rec := recorder(t)
	c := client(t, e, "subs", WithConnectOptions(snodo.WithTracerProvider(tp)), WithHeartbeat(100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)
	last := func() sdktrace.ReadOnlySpan {
		t.Helper()
		spans := ended(rec, "subscriptions/listen")
		require.NotEmpty(t, spans)
		return spans[len(spans)-1]
	}
	serverEnds := func(mode string) *snodo.Subscription {
		t.Helper()
		sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
		require.NoError(t, err)
		raw, err := c.Request(ctx, "test/subscriptions", nil)
		require.NoError(t, err)
		var open struct{ Open []json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &open))
		require.Len(t, open.Open, 1)
		_, err = c.Request(ctx, "test/endSubscription", map[string]any{"subscription": open.Open[0], "mode": mode})
		require.NoError(t, err)
		<-sub.Done()
		return sub
	}

	sub := serverEnds("graceful")
	require.NoError(t, sub.Err())
	assert.Equal(t, codes.Unset, last().Status().Code, "a graceful end")

	sub = serverEnds("teardown")
	require.ErrorIs(t, sub.Err(), ErrHostEnded)
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionTeardown, "as a local subscription's")
	assert.Equal(t, codes.Error, last().Status().Code)
	assert.Equal(t, "server_teardown", attrsOf(last())["error.type"])

	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true}, snodo.MaxQueued(1, 0))
	require.NoError(t, err)
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 3})
	require.NoError(t, err)
	<-sub.Done() // nobody reads: the second event overflows the queue
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionQueueFull)
	assert.Equal(t, "queue_full", attrsOf(last())["error.type"])
	assert.Len(t, ended(rec, "notifications/tools/list_changed"), 1, "only the queued event")

	owned, cancel := context.WithCancel(ctx)
	sub, err = c.Listen(owned, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	cancel()
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), snodo.ErrOwnerExited)
	assert.Equal(t, codes.Unset, last().Status().Code, "the owner leaving is no error")

	sub, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(ctx))
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), ErrHostEnded)
	assert.Equal(t, codes.Error, last().Status().Code)
	assert.Equal(t, "connection_closed", attrsOf(last())["error.type"], "the host's connection to its server is gone")
	assert.Contains(t, last().Status().Description, "draining")

	n := len(ended(rec, "subscriptions/listen"))
	_, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.ErrorIs(t, err, ErrNoHost)
	require.Len(t, ended(rec, "subscriptions/listen"), n+1, "a failed Listen ends its span")
	assert.Equal(t, "connection_closed", attrsOf(last())["error.type"])
}

// With ListenTo the events go to the actor, and are traced as on Events;
// the actor stopping ends the span without an error.
func TestRemoteListenToIsTraced(t *testing.T) {
	e := natsServer(t)
	host(t, e, "events", 1)
	tp, rec := recorder(t)
	sys := snodoactor.NewQuietSystem(nil)
	c := client(t, e, "events", WithConnectOptions(snodo.WithTracerProvider(tp)), WithConnectOptions(snodo.WithActorSystem(sys)), WithHeartbeat(100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)
	got := make(chan *snodo.SubscriptionEvent, 4)
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if ev, ok := ctx.Message().(*snodo.SubscriptionEvent); ok {
			got <- ev
		}
	}))
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(pid))
	require.NoError(t, err)
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	testutil.Receive(t, got, 5*time.Second, "an event")
	sys.Root.Stop(pid)
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), snodo.ErrOwnerExited)

	listen := ended(rec, "subscriptions/listen")
	require.Len(t, listen, 1)
	assert.Equal(t, codes.Unset, listen[0].Status().Code, "the actor leaving is no error")
	events := ended(rec, "notifications/tools/list_changed")
	require.Len(t, events, 1)
	assert.Equal(t, trace.SpanKindServer, events[0].SpanKind())
	assert.Equal(t, listen[0].SpanContext().SpanID(), events[0].Parent().SpanID())
}
