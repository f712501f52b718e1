package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/test/testutil"
)

// traced returns a tracer provider recording every span in memory.
func traced(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// spansNamed returns the ended spans called name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// receivedMeta is the params._meta of the requests of method the test
// server received.
func receivedMeta(t *testing.T, c *Client, method string) []map[string]any {
	t.Helper()
	raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": method})
	require.NoError(t, err)
	var res struct {
		Requests []struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		} `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	var out []map[string]any
	for _, r := range res.Requests {
		out = append(out, r.Params.Meta)
	}
	return out
}

func traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

func TestTraceSpansFollowTheMCPConventions(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			tp, rec := traced(t)
			c := dialTest(t, []string{"-era", era}, WithTracerProvider(tp))
			ctx, parent := tp.Tracer("test").Start(t.Context(), "caller")

			var progress int
			res, err := c.CallTool(ctx, "slow", map[string]any{"ms": 40},
				OnProgress(func(Progress) { progress++ }))
			require.NoError(t, err)
			require.False(t, res.IsError)
			_, err = c.CallTool(ctx, "fail", nil)
			require.NoError(t, err)
			_, err = c.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"})
			require.NoError(t, err)
			_, err = c.Request(ctx, "test/sleep", map[string]any{"ms": 5000, "honorCancel": true}, Timeout(50*time.Millisecond))
			require.ErrorIs(t, err, ErrTimeout)
			_, err = c.Request(ctx, "test/error", map[string]any{"code": -32050, "message": "nope"})
			require.Error(t, err)
			parent.End()

			slow := spansNamed(rec, "tools/call slow")
			require.Len(t, slow, 1)
			s := slow[0]
			assert.Equal(t, trace.SpanKindClient, s.SpanKind())
			assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID(), "the caller's span is the parent")
			assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
			a := spanAttrs(s)
			assert.Equal(t, "tools/call", a["mcp.method.name"])
			assert.Equal(t, "slow", a["gen_ai.tool.name"])
			assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
			assert.Equal(t, "pipe", a["network.transport"])
			assert.Equal(t, c.ProtocolVersion(), a["mcp.protocol.version"])
			assert.NotEmpty(t, a["jsonrpc.request.id"])
			assert.NotContains(t, a, "error.type")
			assert.Equal(t, codes.Unset, s.Status().Code)
			var events int
			for _, ev := range s.Events() {
				if ev.Name == "notifications/progress" {
					events++
				}
			}
			assert.Equal(t, progress, events, "one event per progress update")
			assert.Positive(t, events)

			// The server received the span's context in params._meta.
			metas := receivedMeta(t, c, "tools/call")
			require.Len(t, metas, 2)
			assert.Equal(t, traceparent(s.SpanContext()), metas[0]["traceparent"])
			assert.Equal(t, traceparent(spansNamed(rec, "tools/call fail")[0].SpanContext()), metas[1]["traceparent"])

			fail := spansNamed(rec, "tools/call fail")[0]
			assert.Equal(t, "tool_error", spanAttrs(fail)["error.type"])
			assert.Equal(t, codes.Error, fail.Status().Code)

			prompt := spansNamed(rec, "prompts/get greet")
			require.Len(t, prompt, 1)
			assert.Equal(t, "greet", spanAttrs(prompt[0])["gen_ai.prompt.name"])

			sleep := spansNamed(rec, "test/sleep")
			require.Len(t, sleep, 1)
			assert.Equal(t, "timeout", spanAttrs(sleep[0])["error.type"])
			assert.NotContains(t, spanAttrs(sleep[0]), "rpc.response.status_code", "a local timeout has no response")
			assert.Equal(t, codes.Error, sleep[0].Status().Code)

			serverErr := spansNamed(rec, "test/error")
			require.Len(t, serverErr, 1)
			assert.Equal(t, "-32050", spanAttrs(serverErr[0])["error.type"])
			assert.Equal(t, "-32050", spanAttrs(serverErr[0])["rpc.response.status_code"])
			assert.Equal(t, "nope", serverErr[0].Status().Description)

			// The handshake is traced too: a root span, since Connect's ctx had none.
			handshake := "server/discover"
			if era == "legacy" {
				handshake = "initialize"
			}
			hs := spansNamed(rec, handshake)
			require.NotEmpty(t, hs)
			assert.False(t, hs[len(hs)-1].Parent().IsValid())
		})
	}
}

func TestTraceWithoutSpanInContextSendsNoTraceparent(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"}) // global providers: the default no-op
	_, err := c.CallTool(t.Context(), "echo", map[string]any{"message": "hi"})
	require.NoError(t, err)
	metas := receivedMeta(t, c, "tools/call")
	require.Len(t, metas, 1)
	assert.NotContains(t, metas[0], "traceparent")
	assert.Contains(t, metas[0], "io.modelcontextprotocol/protocolVersion", "the era's _meta is still there")
}

func TestTraceContextOfTheCallerIsPropagatedWithoutAProvider(t *testing.T) {
	// A span from another provider in ctx: snodo records nothing (no
	// provider set) but still carries the caller's trace to the server.
	tp, _ := traced(t)
	ctx, span := tp.Tracer("test").Start(t.Context(), "caller")
	defer span.End()
	forEachEra(t, func(t *testing.T, c *Client) {
		_, err := c.CallTool(ctx, "echo", map[string]any{"message": "hi"})
		require.NoError(t, err)
		metas := receivedMeta(t, c, "tools/call")
		require.Len(t, metas, 1)
		assert.Equal(t, traceparent(span.SpanContext()), metas[0]["traceparent"])
	})
}

func TestTraceInputRequiredRoundsAndHandlerSpans(t *testing.T) {
	tp, rec := traced(t)
	handler := func(ctx context.Context, req *ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	c := dialTest(t, []string{"-era", "modern"}, WithTracerProvider(tp), WithServerRequestHandler(handler),
		WithClientCapabilities(ClientCapabilities{Elicitation: &ElicitationCapability{}}))
	ctx, parent := tp.Tracer("test").Start(t.Context(), "caller")
	_, err := c.CallTool(ctx, "ask", map[string]any{"rounds": 2})
	require.NoError(t, err)
	parent.End()

	ask := spansNamed(rec, "tools/call ask")
	require.Len(t, ask, 3, "each round is a request of its own")
	var rounds int
	for _, s := range ask {
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
		for _, ev := range s.Events() {
			if ev.Name == "input_required" {
				rounds++
			}
		}
	}
	assert.Equal(t, 2, rounds, "an event on each request answered input_required")
	handlers := spansNamed(rec, "elicitation/create")
	require.Len(t, handlers, 2)
	for _, h := range handlers {
		assert.Equal(t, trace.SpanKindServer, h.SpanKind())
		assert.Equal(t, parent.SpanContext().SpanID(), h.Parent().SpanID(), "an input request runs under the call")
	}
	// Each round's request carried its own span's context.
	metas := receivedMeta(t, c, "tools/call")
	require.Len(t, metas, 3)
	for i, m := range metas {
		assert.Equal(t, traceparent(ask[i].SpanContext()), m["traceparent"])
	}
}

func TestTraceServerRequestJoinsTheServersTrace(t *testing.T) {
	tp, rec := traced(t)
	handler := func(ctx context.Context, req *ServerRequest) (any, error) {
		return map[string]any{"roots": []any{}}, nil
	}
	c := dialTest(t, []string{"-era", "legacy"}, WithTracerProvider(tp), WithServerRequestHandler(handler))
	const serverTrace, serverSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	_, err := c.Request(t.Context(), "test/serverRequest", map[string]any{
		"method": "roots/list",
		"params": map[string]any{"_meta": map[string]any{"traceparent": "00-" + serverTrace + "-" + serverSpan + "-01"}},
	})
	require.NoError(t, err)
	var spans []sdktrace.ReadOnlySpan
	testutil.Eventually(t, func() bool { spans = spansNamed(rec, "roots/list"); return len(spans) == 1 }, 5*time.Second, "no handler span")
	h := spans[0]
	assert.Equal(t, trace.SpanKindServer, h.SpanKind())
	assert.Equal(t, serverTrace, h.SpanContext().TraceID().String())
	assert.Equal(t, serverSpan, h.Parent().SpanID().String())
	assert.True(t, h.Parent().IsRemote())
	assert.Equal(t, "roots/list", spanAttrs(h)["mcp.method.name"])
	assert.NotEmpty(t, spanAttrs(h)["jsonrpc.request.id"])
}

func TestTraceSubscriptionAndItsEvents(t *testing.T) {
	tp, rec := traced(t)
	c := dialTest(t, []string{"-era", "modern"}, WithTracerProvider(tp))
	ctx, parent := tp.Tracer("test").Start(t.Context(), "caller")
	sub, err := c.Listen(ctx, Filter{ToolsListChanged: true})
	require.NoError(t, err)
	_, err = c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 2})
	require.NoError(t, err)
	for range 2 {
		<-sub.Events()
	}
	sub.Close()
	<-sub.Done()
	parent.End()

	listen := spansNamed(rec, "subscriptions/listen")
	require.Len(t, listen, 1)
	assert.Equal(t, parent.SpanContext().SpanID(), listen[0].Parent().SpanID())
	assert.Equal(t, codes.Unset, listen[0].Status().Code, "Close is a clean end")
	events := spansNamed(rec, "notifications/tools/list_changed")
	require.Len(t, events, 2)
	for _, ev := range events {
		assert.Equal(t, trace.SpanKindServer, ev.SpanKind(), "a notification the peer initiated")
		assert.Equal(t, listen[0].SpanContext().SpanID(), ev.Parent().SpanID(), "no context in _meta: the listen span is the parent")
		a := spanAttrs(ev)
		assert.NotContains(t, a, "jsonrpc.request.id", "a notification has no id")
		assert.Equal(t, c.ProtocolVersion(), a["mcp.protocol.version"])
		assert.Equal(t, "notifications/tools/list_changed", a["mcp.method.name"])
	}
	metas := receivedMeta(t, c, "subscriptions/listen")
	require.Len(t, metas, 1)
	assert.Equal(t, traceparent(listen[0].SpanContext()), metas[0]["traceparent"])
	assert.Contains(t, metas[0], "io.modelcontextprotocol/protocolVersion", "one _meta carries both")
}

// An event whose _meta carries the server's trace context is a child of
// the server's span, linked to the listen span; a resource update names
// its resource.
func TestTraceEventJoinsTheServersTrace(t *testing.T) {
	tp, rec := traced(t)
	c := dialTest(t, []string{"-era", "modern"}, WithTracerProvider(tp))
	sub, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	const serverTrace, serverSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	_, err = c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/resources/updated",
		"params": map[string]any{"uri": "test://a", "_meta": map[string]any{"traceparent": "00-" + serverTrace + "-" + serverSpan + "-01"}}})
	require.NoError(t, err)
	<-sub.Events()
	sub.Close()
	<-sub.Done()

	listen := spansNamed(rec, "subscriptions/listen")
	require.Len(t, listen, 1)
	events := spansNamed(rec, "notifications/resources/updated")
	require.Len(t, events, 1)
	ev := events[0]
	assert.Equal(t, trace.SpanKindServer, ev.SpanKind())
	assert.Equal(t, serverTrace, ev.SpanContext().TraceID().String())
	assert.Equal(t, serverSpan, ev.Parent().SpanID().String())
	assert.True(t, ev.Parent().IsRemote())
	require.Len(t, ev.Links(), 1)
	assert.Equal(t, listen[0].SpanContext().SpanID(), ev.Links()[0].SpanContext.SpanID(), "the listen span, linked")
	assert.Equal(t, "test://a", spanAttrs(ev)["mcp.resource.uri"])
}

func sumWhere(t *testing.T, data metricdata.Aggregation, key, value string) int64 {
	t.Helper()
	var total int64
	match := func(set attribute.Set) bool {
		if key == "" {
			return true
		}
		v, ok := set.Value(attribute.Key(key))
		return ok && v.Emit() == value
	}
	switch d := data.(type) {
	case nil:
		return 0 // nothing recorded yet
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += int64(p.Count)
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += int64(p.Count)
			}
		}
	default:
		t.Fatalf("unexpected aggregation %T", data)
	}
	return total
}

func TestMetricsAfterAKnownSequence(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

			release := make(chan struct{})
			var once sync.Once
			handler := func(ctx context.Context, req *ServerRequest) (any, error) {
				select { // hold the only slot until the second request was refused
				case <-release:
				case <-ctx.Done():
				}
				return map[string]any{"roots": []any{}}, nil
			}
			cmd, args := testutil.Server(t, "-era", era)
			c, err := Connect(t.Context(), cmd, args, WithMeterProvider(mp),
				WithServerRequestHandler(handler), WithMaxServerRequests(1))
			require.NoError(t, err)

			const n = 3
			for i := range n {
				_, err := c.CallTool(t.Context(), "echo", map[string]any{"message": fmt.Sprint(i)})
				require.NoError(t, err)
			}
			_, err = c.Request(t.Context(), "test/sleep", map[string]any{"ms": 5000, "honorCancel": true}, Timeout(50*time.Millisecond))
			require.ErrorIs(t, err, ErrTimeout)

			if era == "legacy" { // server requests exist in the legacy era only
				go func() {
					// Released once the refusal is counted.
					testutil.Eventually(t, func() bool {
						return sumWhere(t, testutil.Metrics(t, reader)["snodo.client.server_requests.refused"], "", "") == 1
					}, 10*time.Second, "no refusal counted")
					once.Do(func() { close(release) })
				}()
				_, err = c.Request(t.Context(), "test/serverRequest", map[string]any{"method": "roots/list", "count": 2, "concurrent": true})
				require.NoError(t, err)
			}

			_, err = c.Request(t.Context(), "test/crash", map[string]any{"code": 3})
			require.ErrorIs(t, err, ErrConnectionClosed)
			<-c.Done()

			m := testutil.Metrics(t, reader)
			op := m["mcp.client.operation.duration"]
			require.NotNil(t, op)
			assert.EqualValues(t, n, sumWhere(t, op, "gen_ai.tool.name", "echo"))
			assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "timeout"))
			assert.EqualValues(t, 1, sumWhere(t, op, "mcp.method.name", "test/crash"))
			assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "connection_closed"))
			if h, ok := op.(metricdata.Histogram[float64]); assert.True(t, ok) {
				for _, p := range h.DataPoints {
					assert.Equal(t, []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}, p.Bounds)
				}
			}
			session := m["mcp.client.session.duration"]
			require.NotNil(t, session)
			assert.EqualValues(t, 1, sumWhere(t, session, "error.type", "server_exited"))
			assert.EqualValues(t, 1, sumWhere(t, m["snodo.client.server.exits"], "snodo.exit.cause", "server_exited"))
			assert.EqualValues(t, 0, sumWhere(t, m["snodo.client.requests.active"], "", ""), "nothing left in flight")
			assert.Positive(t, sumWhere(t, m["snodo.client.io"], "network.io.direction", "transmit"))
			assert.Positive(t, sumWhere(t, m["snodo.client.io"], "network.io.direction", "receive"))
			if era == "legacy" {
				assert.EqualValues(t, 1, sumWhere(t, m["snodo.client.server_requests.refused"], "", ""))
				assert.EqualValues(t, 0, sumWhere(t, m["snodo.client.server_requests.active"], "", ""))
			}
		})
	}
}

func TestTelemetryOptionsRejectNil(t *testing.T) {
	cmd, args := testutil.Server(t)
	_, err := Connect(t.Context(), cmd, args, WithTracerProvider(nil))
	assert.ErrorContains(t, err, "WithTracerProvider")
	_, err = Connect(t.Context(), cmd, args, WithMeterProvider(nil))
	assert.ErrorContains(t, err, "WithMeterProvider")
	assert.False(t, errors.Is(err, ErrConnectionClosed))
}

func TestLogRecordsCarryTheConnectionsIdentity(t *testing.T) {
	check := func(era string) {
		var buf testutil.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := dialTest(t, []string{"-era", era}, WithLogger(log))
		_, err := c.Request(t.Context(), "test/duplicate", nil) // the second answer is logged and dropped
		require.NoError(t, err)
		var rec map[string]any
		testutil.Eventually(t, func() bool {
			for _, line := range strings.Split(buf.String(), "\n") {
				if strings.Contains(line, "no request in flight") {
					return json.Unmarshal([]byte(line), &rec) == nil
				}
			}
			return false
		}, 5*time.Second, "no record of the duplicate answer")
		assert.Equal(t, "snodo-testserver", rec["server"])
		assert.EqualValues(t, c.ServerPID(), rec["server_pid"])
		assert.Equal(t, era, rec["era"])
	}
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) { check(era) })
	}
}

func TestMetricsOfSubscriptionsAndDroppedNotifications(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

	modern := dialTest(t, []string{"-era", "modern"}, WithMeterProvider(mp))
	sub, err := modern.Listen(t.Context(), Filter{ToolsListChanged: true}, MaxQueued(2, 0))
	require.NoError(t, err)
	_, err = modern.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 3})
	require.NoError(t, err)
	<-sub.Done() // nobody reads: the third event overflows the queue
	require.ErrorIs(t, sub.Err(), ErrSubscriptionQueueFull)

	legacy := dialTest(t, []string{"-era", "legacy"}, WithMeterProvider(mp)) // no notification handler
	_, err = legacy.Request(t.Context(), "test/notify", map[string]any{"method": "notifications/message", "params": map[string]any{"level": "info", "data": "x"}})
	require.NoError(t, err)

	var m map[string]metricdata.Aggregation
	testutil.Eventually(t, func() bool {
		m = testutil.Metrics(t, reader)
		return sumWhere(t, m["snodo.client.notifications.dropped"], "snodo.drop.reason", "unclaimed") >= 1
	}, 5*time.Second, "the unclaimed notification was not counted")
	assert.EqualValues(t, 1, sumWhere(t, m["snodo.client.subscription.overflows"], "", ""))
	assert.EqualValues(t, 2, sumWhere(t, m["snodo.client.subscription.queue.depth"], "", ""), "one sample per queued event")
	if h, ok := m["snodo.client.subscription.queue.depth"].(metricdata.Histogram[int64]); assert.True(t, ok) {
		maxDepth, _ := h.DataPoints[0].Max.Value()
		assert.EqualValues(t, 2, maxDepth)
	}
}

func TestResourceURIOnSpansNotInMetrics(t *testing.T) {
	tp, rec := traced(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c := dialTest(t, []string{"-era", "modern"}, WithTracerProvider(tp), WithMeterProvider(mp))
	_, err := c.ReadResource(t.Context(), "test://a")
	require.NoError(t, err)
	spans := spansNamed(rec, "resources/read")
	require.Len(t, spans, 1, "a URI never goes into a span name")
	assert.Equal(t, "test://a", spanAttrs(spans[0])["mcp.resource.uri"])
	h, ok := testutil.Metrics(t, reader)["mcp.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	for _, p := range h.DataPoints {
		_, has := p.Attributes.Value("mcp.resource.uri")
		assert.False(t, has)
		if v, _ := p.Attributes.Value("mcp.method.name"); v.AsString() == "resources/read" {
			tr, _ := p.Attributes.Value("network.transport")
			assert.Equal(t, "pipe", tr.AsString())
		}
	}
}

// resources/subscribe and resources/unsubscribe (a legacy Listen's) name
// a resource too: the conventions want its URI on the span, never in the
// span name.
func TestResourceURIOnSubscribeSpans(t *testing.T) {
	tp, rec := traced(t)
	c := dialTest(t, []string{"-era", "legacy"}, WithTracerProvider(tp))
	sub, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{"test://a"}})
	require.NoError(t, err)
	require.NoError(t, sub.Close()) // returns once resources/unsubscribe is answered
	for _, method := range []string{"resources/subscribe", "resources/unsubscribe"} {
		spans := spansNamed(rec, method)
		require.Len(t, spans, 1, "%s: a URI never goes into a span name", method)
		assert.Equal(t, "test://a", spanAttrs(spans[0])["mcp.resource.uri"], method)
	}
}

func TestTraceNotificationsCarryTheirSpan(t *testing.T) {
	tp, rec := traced(t)
	for _, era := range []string{"modern", "legacy"} {
		c := dialTest(t, []string{"-era", era}, WithTracerProvider(tp))
		ctx, parent := tp.Tracer("test").Start(t.Context(), "caller")
		require.NoError(t, c.Notify(ctx, "notifications/roots/list_changed", nil))
		require.NoError(t, c.Notify(ctx, "test/note", json.RawMessage(`{"_meta":{"k":1},"x":2}`)))
		parent.End()
		raw, err := c.Request(t.Context(), "test/waitNotification", map[string]any{"method": "test/note"})
		require.NoError(t, err)
		var got struct {
			Messages []struct {
				Params struct {
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(raw, &got))
		require.Len(t, got.Messages, 1)
		spans := spansNamed(rec, "test/note")
		require.NotEmpty(t, spans)
		s := spans[len(spans)-1]
		assert.Equal(t, trace.SpanKindClient, s.SpanKind())
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
		assert.Equal(t, traceparent(s.SpanContext()), got.Messages[0].Params.Meta["traceparent"])
		assert.EqualValues(t, 1, got.Messages[0].Params.Meta["k"], "the caller's _meta is kept")
	}
}

// Instrument over a nil requester fails each request with errNoRequester,
// as newCalls(nil, nil) does, traced or not, instead of panicking.
func TestInstrumentNilRequester(t *testing.T) {
	tp, _ := traced(t)
	for name, r := range map[string]requester{"untraced": instrument(nil, nil, nil, "tcp", "x"), "traced": instrument(nil, tp, nil, "tcp", "x")} {
		t.Run(name, func(t *testing.T) {
			require.NotPanics(t, func() {
				_, err := r.Request(t.Context(), "tools/list", nil)
				require.ErrorIs(t, err, errNoRequester)
				_, err = newCalls(r, nil).CallTool(t.Context(), "echo", nil)
				require.ErrorIs(t, err, errNoRequester)
				_ = r.Era()
			})
		})
	}
}

// When Listen's ctx ends before the server acknowledged the subscription,
// the owner left: Listen fails with an error wrapping snodo.ErrOwnerExited and
// the ctx's cause, and the span has no error (the rule of
// SubscriptionTrace.End), as for a remote Listen
// (TestRemoteListenOwnerLeavingBeforeAckIsNoError in remote).
func TestListenOwnerLeavingBeforeAckIsNoError(t *testing.T) {
	tp, rec := traced(t)
	c := dialTest(t, []string{"-silent-listen"}, WithTracerProvider(tp))
	owned, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Listen(owned, Filter{ToolsListChanged: true})
		done <- err
	}()
	testutil.Eventually(t, func() bool {
		return len(receivedMeta(t, c, "subscriptions/listen")) == 1
	}, 10*time.Second, "the server never received the listen request")
	cancel()
	err := testutil.Receive(t, done, 10*time.Second, "Listen's return")
	require.ErrorIs(t, err, ErrOwnerExited)
	require.ErrorIs(t, err, context.Canceled)

	spans := spansNamed(rec, "subscriptions/listen")
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Unset, spans[0].Status().Code, "the owner leaving is no error")
	assert.NotContains(t, spanAttrs(spans[0]), "error.type")
}
