package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/snodo/snodo/internal/jsonrpc"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/telemetry"
	"github.com/snodo/snodo/test/testutil"
)

// error.type is the code of an error response, and a word when no
// response came: a local timeout must not pass for a -32001 the server
// sent, nor a closed connection for its -32000.
func TestErrorTypeTellsLocalErrorsFromServerCodes(t *testing.T) {
	tp, rec := traced(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c := dialTest(t, []string{"-era", "modern"}, WithTracerProvider(tp), WithMeterProvider(mp))

	_, err := c.Request(t.Context(), "test/sleep", map[string]any{"ms": 5000, "honorCancel": true}, Timeout(50*time.Millisecond))
	require.ErrorIs(t, err, ErrTimeout)
	_, err = c.Request(t.Context(), "test/error", map[string]any{"code": CodeTimeout, "message": "upstream slow"})
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrTimeout)
	_, err = c.Request(t.Context(), "test/error", map[string]any{"code": CodeConnectionClosed, "message": "upstream gone"})
	require.Error(t, err)
	_, err = c.Request(t.Context(), "test/echo", json.RawMessage(`[1]`))
	require.ErrorIs(t, err, ErrInvalidParams)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Request(ctx, "test/pid", nil)
	require.ErrorIs(t, err, context.Canceled)
	// The caller's ctx ends while the request waits: its end is counted
	// all the same (the SDK drops a measurement made with a done ctx).
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Request(ctx, "test/waitNotification", map[string]any{"method": "never", "timeoutMs": 5000})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = c.Request(t.Context(), "test/crash", map[string]any{"code": 3})
	require.ErrorIs(t, err, ErrConnectionClosed)
	<-c.Done()

	type want struct{ errType, code, desc string }
	check := func(name string, w want) {
		t.Helper()
		spans := spansNamed(rec, name)
		require.NotEmpty(t, spans, name)
		for _, s := range spans {
			a := spanAttrs(s)
			assert.Equal(t, w.errType, a["error.type"], name)
			if w.code == "" {
				assert.NotContains(t, a, "rpc.response.status_code", "%s: no response, no code", name)
			} else {
				assert.Equal(t, w.code, a["rpc.response.status_code"], name)
			}
			assert.Equal(t, codes.Error, s.Status().Code, name)
			if w.desc != "" {
				assert.Equal(t, w.desc, s.Status().Description, "%s: the JSON-RPC error's message", name)
			}
		}
	}
	check("test/sleep", want{errType: "timeout"})
	check("test/crash", want{errType: "connection_closed"})
	check("test/echo", want{errType: "invalid_params"})
	check("test/pid", want{errType: "cancelled"})
	errSpans := spansNamed(rec, "test/error")
	require.Len(t, errSpans, 2)
	assert.Equal(t, "-32001", spanAttrs(errSpans[0])["error.type"], "a -32001 the server sent is its code")
	assert.Equal(t, "-32001", spanAttrs(errSpans[0])["rpc.response.status_code"])
	assert.Equal(t, "upstream slow", errSpans[0].Status().Description)
	assert.Equal(t, "-32000", spanAttrs(errSpans[1])["error.type"])
	assert.Equal(t, "-32000", spanAttrs(errSpans[1])["rpc.response.status_code"])

	m := testutil.Metrics(t, reader)
	op := m[telemetry.MetricOperationDuration]
	assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "timeout"))
	assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "connection_closed"))
	assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "-32001"))
	assert.EqualValues(t, 1, sumWhere(t, op, "rpc.response.status_code", "-32001"))
	assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "invalid_params"))
	assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "cancelled"))
	assert.EqualValues(t, 1, sumWhere(t, op, "error.type", "deadline_exceeded"))
	assert.EqualValues(t, 0, sumWhere(t, m["snodo.client.requests.active"], "", ""), "nothing left in flight")
	check("test/waitNotification", want{errType: "deadline_exceeded"})
}

func TestClassifyWords(t *testing.T) {
	for _, tc := range []struct {
		err          error
		errType, got string
	}{
		{&Error{Code: -32602, Message: "bad"}, "-32602", "-32602"},
		{jsonrpc.NewLocalError(CodeTimeout, "t", ErrTimeout), "timeout", ""},
		{jsonrpc.NewLocalError(CodeTimeout, "a requester's own, no sentinel", errors.New("its cause")), "timeout", ""},
		{jsonrpc.ClosedError(ErrServerExited), "connection_closed", ""},
		{jsonrpc.NewLocalError(CodeInternalError, "q", ErrWriteQueueFull), "write_queue_full", ""},
		{context.DeadlineExceeded, "deadline_exceeded", ""},
		{errors.Join(ErrInputRequest, &Error{Code: 4242, Message: "the handler's"}), "input_request_failed", ""},
		{errors.New("other"), "_OTHER", ""},
	} {
		errType, code, desc := classify("x", nil, tc.err)
		assert.Equal(t, tc.errType, errType, "%v", tc.err)
		assert.Equal(t, tc.got, code, "%v", tc.err)
		assert.NotEmpty(t, desc)
	}
}

// An answer to elicitation/create that snodo refuses to send (an
// accepted form that does not fit the requested schema) is on the
// handler's span and in its duration as the -32603 the server gets
// instead, by the receiver's rules, in both eras: a server request
// (legacy) and an input request (modern). A fitting answer is no error.
func TestTraceRefusedElicitationAnswerOnTheHandlerSpan(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			tp, rec := traced(t)
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			var runs atomic.Int32
			handler := func(ctx context.Context, req *ServerRequest) (any, error) {
				if runs.Add(1) == 1 {
					return handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				}
				return handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": 42}}, nil // the schema asks for a string
			}
			c := dialTest(t, []string{"-era", era}, WithTracerProvider(tp), WithMeterProvider(mp), WithServerRequestHandler(handler),
				WithClientCapabilities(ClientCapabilities{Elicitation: &ElicitationCapability{}}))
			res, err := c.CallTool(t.Context(), "ask", map[string]any{"rounds": 2})
			if era == "modern" {
				require.ErrorIs(t, err, ErrInputRequest, "the refused answer fails the call")
				assert.ErrorContains(t, err, "snodo refused to send the handler's answer to elicitation/create")
			} else {
				require.NoError(t, err)
				require.True(t, res.IsError)
				assert.Contains(t, res.Content[0].Text, "does not match the requested schema", "the server was answered -32603")
			}
			var spans []sdktrace.ReadOnlySpan
			testutil.Eventually(t, func() bool { spans = spansNamed(rec, "elicitation/create"); return len(spans) == 2 }, 5*time.Second, "handler spans missing")

			fits := spanAttrs(spans[0])
			assert.NotContains(t, fits, "error.type", "the first answer fits")
			assert.NotContains(t, fits, "rpc.response.status_code")
			assert.Equal(t, codes.Unset, spans[0].Status().Code)

			refused := spanAttrs(spans[1])
			assert.Equal(t, "-32603", refused["error.type"], "what the server was answered")
			assert.Equal(t, "-32603", refused["rpc.response.status_code"])
			assert.Equal(t, codes.Error, spans[1].Status().Code)
			assert.Contains(t, spans[1].Status().Description, "does not match the requested schema")

			served := testutil.Metrics(t, reader)[telemetry.MetricServerOperationDuration]
			assert.EqualValues(t, 2, sumWhere(t, served, "mcp.method.name", "elicitation/create"))
			assert.EqualValues(t, 1, sumWhere(t, served, "error.type", "-32603"))
		})
	}
}

// The client's side of a server request is the receiver's side: a code
// that says the server asked for something impossible is recorded, but
// is no error of the client's; any other error response is.
func TestTraceHandlerSpanStatusFollowsTheReceiverRules(t *testing.T) {
	tp, rec := traced(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	handler := func(ctx context.Context, req *ServerRequest) (any, error) {
		var p struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(req.Params, &p)
		switch p.Kind {
		case "invalid":
			return nil, &Error{Code: CodeInvalidParams, Message: "no such root"}
		case "custom":
			return nil, &Error{Code: 4242, Message: "nope"}
		case "plain":
			return nil, errors.New("boom")
		case "block":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return map[string]any{"roots": []any{}}, nil
	}
	c := dialTest(t, []string{"-era", "legacy"}, WithTracerProvider(tp), WithMeterProvider(mp), WithServerRequestHandler(handler))
	kinds := []string{"ok", "invalid", "custom", "plain", "block"}
	for _, kind := range kinds {
		args := map[string]any{"method": "roots/list", "params": map[string]any{"kind": kind}}
		if kind == "block" {
			args["cancelAfterMs"] = 50
		}
		_, err := c.Request(t.Context(), "test/serverRequest", args)
		require.NoError(t, err, kind)
	}
	var spans []sdktrace.ReadOnlySpan
	testutil.Eventually(t, func() bool { spans = spansNamed(rec, "roots/list"); return len(spans) == len(kinds) }, 5*time.Second, "handler spans missing")
	byKind := map[string]sdktrace.ReadOnlySpan{}
	for i, s := range spans {
		byKind[kinds[i]] = s // each ended before the next request was made
	}
	ok := spanAttrs(byKind["ok"])
	assert.NotContains(t, ok, "error.type")
	assert.NotContains(t, ok, "rpc.response.status_code")
	assert.Equal(t, codes.Unset, byKind["ok"].Status().Code)

	invalid := spanAttrs(byKind["invalid"])
	assert.Equal(t, "-32602", invalid["rpc.response.status_code"])
	assert.NotContains(t, invalid, "error.type", "-32602 is the sender's fault")
	assert.Equal(t, codes.Unset, byKind["invalid"].Status().Code)

	custom := spanAttrs(byKind["custom"])
	assert.Equal(t, "4242", custom["error.type"])
	assert.Equal(t, "4242", custom["rpc.response.status_code"])
	assert.Equal(t, codes.Error, byKind["custom"].Status().Code)
	assert.Equal(t, "nope", byKind["custom"].Status().Description)

	plain := spanAttrs(byKind["plain"])
	assert.Equal(t, "-32603", plain["error.type"], "what the server was answered")
	assert.Equal(t, "-32603", plain["rpc.response.status_code"])
	assert.Equal(t, "boom", byKind["plain"].Status().Description)

	block := spanAttrs(byKind["block"])
	assert.Equal(t, "cancelled", block["error.type"])
	assert.NotContains(t, block, "rpc.response.status_code", "no answer was sent")
	assert.Equal(t, codes.Error, byKind["block"].Status().Code)
	m := testutil.Metrics(t, reader)
	assert.EqualValues(t, 0, sumWhere(t, m["snodo.client.server_requests.active"], "", ""),
		"the cancelled handler's end is counted")

	// The receiver's metric, with the same outcome attributes.
	served := m[telemetry.MetricServerOperationDuration]
	assert.EqualValues(t, len(kinds), sumWhere(t, served, "mcp.method.name", "roots/list"))
	assert.EqualValues(t, 1, sumWhere(t, served, "rpc.response.status_code", "-32602"))
	assert.EqualValues(t, 1, sumWhere(t, served, "error.type", "4242"))
	assert.EqualValues(t, 1, sumWhere(t, served, "error.type", "-32603"))
	assert.EqualValues(t, 1, sumWhere(t, served, "error.type", "cancelled"))
	if h, ok := served.(metricdata.Histogram[float64]); assert.True(t, ok) {
		for _, p := range h.DataPoints {
			if code, _ := p.Attributes.Value("rpc.response.status_code"); code.AsString() == "-32602" {
				_, has := p.Attributes.Value("error.type")
				assert.False(t, has, "the -32602 is no error")
			}
		}
	}

	// A method the server made up: its own span name, but one series in
	// metrics for all such methods.
	_, err := c.Request(t.Context(), "test/serverRequest", map[string]any{"method": "x/custom"})
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return len(spansNamed(rec, "x/custom")) == 1 }, 5*time.Second, "no span for x/custom")
	served = testutil.Metrics(t, reader)[telemetry.MetricServerOperationDuration]
	assert.EqualValues(t, 1, sumWhere(t, served, "mcp.method.name", "_OTHER"))
	if h, ok := served.(metricdata.Histogram[float64]); assert.True(t, ok) {
		for _, p := range h.DataPoints {
			assert.Equal(t, telemetry.DurationBuckets, p.Bounds)
		}
	}
}

// Values from a caller or a server are bounded and valid UTF-8 before
// they reach a span: names, IDs, error messages.
func TestTelemetryBoundsValuesFromCallersAndServers(t *testing.T) {
	tp, rec := traced(t)
	handler := func(ctx context.Context, req *ServerRequest) (any, error) { return map[string]any{}, nil }
	c := dialTest(t, []string{"-era", "legacy"}, WithTracerProvider(tp), WithServerRequestHandler(handler))

	long := strings.Repeat("t", 10*telemetry.MaxName)
	_, _ = c.CallTool(t.Context(), long, nil)
	_, _ = c.CallTool(t.Context(), "bad\xffname", nil)
	_, err := c.Request(t.Context(), "test/error", map[string]any{"code": 4242, "message": strings.Repeat("m", 100*telemetry.MaxText)})
	require.Error(t, err)
	_, err = c.Request(t.Context(), "test/progress", map[string]any{"count": 1, "intervalMs": 1, "message": strings.Repeat("p", 10*telemetry.MaxText)},
		OnProgress(func(Progress) {}))
	require.NoError(t, err)
	serverMethod := "x/" + strings.Repeat("s", 10*telemetry.MaxName)
	_, err = c.Request(t.Context(), "test/serverRequest", map[string]any{"method": serverMethod})
	require.NoError(t, err)

	testutil.Eventually(t, func() bool {
		for _, s := range rec.Ended() {
			if strings.HasPrefix(s.Name(), "x/") {
				return true
			}
		}
		return false
	}, 5*time.Second, "no handler span")
	var sawLong, sawBad, sawServer, sawProgress bool
	for _, s := range rec.Ended() {
		assert.LessOrEqual(t, len(s.Name()), len("tools/call ")+telemetry.MaxName, "span name")
		assert.True(t, utf8.ValidString(s.Name()))
		assert.LessOrEqual(t, len(s.Status().Description), telemetry.MaxText)
		for _, kv := range s.Attributes() {
			v := kv.Value.Emit()
			assert.LessOrEqual(t, len(v), telemetry.MaxName, "%s", kv.Key)
			assert.True(t, utf8.ValidString(v), "%s", kv.Key)
		}
		a := spanAttrs(s)
		switch {
		case strings.HasPrefix(a["gen_ai.tool.name"], "ttt"):
			sawLong = true
			assert.Len(t, a["gen_ai.tool.name"], telemetry.MaxName)
		case strings.HasPrefix(a["gen_ai.tool.name"], "bad"):
			sawBad = true
			assert.Equal(t, "bad\uFFFDname", a["gen_ai.tool.name"])
		case strings.HasPrefix(a["mcp.method.name"], "x/"):
			sawServer = true
		case a["mcp.method.name"] == "test/error":
			assert.Len(t, s.Status().Description, telemetry.MaxText)
		case a["mcp.method.name"] == "test/progress":
			require.NotEmpty(t, s.Events())
			for _, ev := range s.Events() {
				for _, kv := range ev.Attributes {
					if kv.Key == "snodo.progress.message" {
						sawProgress = true
						assert.Len(t, kv.Value.AsString(), telemetry.MaxText, "the server's progress message")
					}
				}
			}
		}
	}
	assert.True(t, sawLong && sawBad && sawServer && sawProgress, "long %v, bad %v, server %v, progress %v", sawLong, sawBad, sawServer, sawProgress)
}

// A notification is an operation too: measured with
// mcp.client.operation.duration (until the line is written: stdio has no
// acknowledgement), and the handshake's notifications/initialized is
// traced and measured like any other.
func TestNotificationsAreMeasuredAndTheHandshakesIsTraced(t *testing.T) {
	tp, rec := traced(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c := dialTest(t, []string{"-era", "legacy"}, WithTracerProvider(tp), WithMeterProvider(mp))
	require.NoError(t, c.Notify(t.Context(), "notifications/roots/list_changed", nil))

	op := testutil.Metrics(t, reader)[telemetry.MetricOperationDuration]
	assert.EqualValues(t, 1, sumWhere(t, op, "mcp.method.name", "notifications/roots/list_changed"))
	assert.EqualValues(t, 1, sumWhere(t, op, "mcp.method.name", "notifications/initialized"))
	hs := spansNamed(rec, "notifications/initialized")
	require.Len(t, hs, 1)
	assert.Equal(t, trace.SpanKindClient, hs[0].SpanKind())
	a := spanAttrs(hs[0])
	assert.Equal(t, "notifications/initialized", a["mcp.method.name"])
	assert.Equal(t, "pipe", a["network.transport"])
	assert.NotContains(t, a, "jsonrpc.request.id")
	metas := receivedNotificationMeta(t, c, "notifications/initialized")
	assert.Equal(t, traceparent(hs[0].SpanContext()), metas["traceparent"])
}

// receivedNotificationMeta is the params._meta of the one notification
// method the test server received.
func receivedNotificationMeta(t *testing.T, c *Client, method string) map[string]any {
	t.Helper()
	raw, err := c.Request(t.Context(), "test/received", map[string]any{"method": method})
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
	return got.Messages[0].Params.Meta
}

// Each method's subject goes where the conventions put it: the tool, the
// prompt (prompts/get, and completion/complete of a prompt's argument)
// in the span name and its gen_ai attribute; a resource URI only in
// mcp.resource.uri; a completion of a resource template's argument has
// no target.
func TestTargetAttributesPerMethod(t *testing.T) {
	tp, rec := traced(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c := dialTest(t, []string{"-era", "modern"}, WithTracerProvider(tp), WithMeterProvider(mp))
	_, err := c.Complete(t.Context(), CompleteRequest{Ref: Reference{Type: "ref/prompt", Name: "greet"}, Argument: "name", Value: "al"})
	require.NoError(t, err)
	_, _ = c.Complete(t.Context(), CompleteRequest{Ref: Reference{Type: "ref/resource", URI: "test://items/{id}"}, Argument: "id", Value: "1"})
	_, _ = c.Request(t.Context(), "tools/call", map[string]any{"arguments": map[string]any{}}) // no name: the server refuses it

	prompt := spansNamed(rec, "completion/complete greet")
	require.Len(t, prompt, 1)
	assert.Equal(t, "greet", spanAttrs(prompt[0])["gen_ai.prompt.name"])
	assert.NotContains(t, spanAttrs(prompt[0]), "gen_ai.operation.name", "not a tool call")
	template := spansNamed(rec, "completion/complete")
	require.Len(t, template, 1)
	assert.NotContains(t, spanAttrs(template[0]), "gen_ai.prompt.name")
	assert.NotContains(t, spanAttrs(template[0]), "mcp.resource.uri", "a URI template is no resource URI")

	unnamed := spansNamed(rec, "tools/call")
	require.Len(t, unnamed, 1)
	assert.Equal(t, "execute_tool", spanAttrs(unnamed[0])["gen_ai.operation.name"], "a tool call, even without a name")
	assert.NotContains(t, spanAttrs(unnamed[0]), "gen_ai.tool.name")

	op := testutil.Metrics(t, reader)[telemetry.MetricOperationDuration]
	assert.EqualValues(t, 1, sumWhere(t, op, "gen_ai.prompt.name", "greet"))
}

// A notification the WithNotificationHandler handler processes is traced
// as the receiver's side: a SERVER span around the handler's run (the
// handler's ctx carries it), child of the server's span when _meta
// carries one, and timed in mcp.server.operation.duration.
func TestTraceNotificationHandlerRuns(t *testing.T) {
	tp, rec := traced(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	handled := make(chan trace.SpanContext, 4)
	handler := func(ctx context.Context, n *Notification) {
		handled <- trace.SpanContextFromContext(ctx)
		if n.Method == "x/panic" {
			panic("boom")
		}
	}
	c := dialTest(t, []string{"-era", "legacy"}, WithTracerProvider(tp), WithMeterProvider(mp), WithNotificationHandler(handler))
	const serverTrace, serverSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, n := range []map[string]any{
		{"method": "notifications/message", "params": map[string]any{"level": "info", "data": "x",
			"_meta": map[string]any{"traceparent": "00-" + serverTrace + "-" + serverSpan + "-01"}}},
		{"method": "notifications/resources/updated", "params": map[string]any{"uri": "test://a"}},
		{"method": "x/panic", "params": map[string]any{}},
	} {
		_, err := c.Request(t.Context(), "test/notify", n)
		require.NoError(t, err)
	}
	var ctxs []trace.SpanContext
	for range 3 {
		ctxs = append(ctxs, <-handled)
	}
	require.NoError(t, c.notes.flush(t.Context()))

	logs := spansNamed(rec, "notifications/message")
	require.Len(t, logs, 1)
	assert.Equal(t, trace.SpanKindServer, logs[0].SpanKind())
	assert.Equal(t, serverTrace, logs[0].SpanContext().TraceID().String())
	assert.Equal(t, serverSpan, logs[0].Parent().SpanID().String())
	assert.Equal(t, logs[0].SpanContext().SpanID(), ctxs[0].SpanID(), "the handler's ctx carries the span")
	assert.NotContains(t, spanAttrs(logs[0]), "jsonrpc.request.id")
	assert.Equal(t, codes.Unset, logs[0].Status().Code)

	updated := spansNamed(rec, "notifications/resources/updated")
	require.Len(t, updated, 1)
	assert.Equal(t, "test://a", spanAttrs(updated[0])["mcp.resource.uri"])

	var panicked []sdktrace.ReadOnlySpan
	testutil.Eventually(t, func() bool { panicked = spansNamed(rec, "x/panic"); return len(panicked) == 1 }, 5*time.Second, "no span for the panicking handler")
	assert.Equal(t, "_OTHER", spanAttrs(panicked[0])["error.type"])
	assert.Equal(t, codes.Error, panicked[0].Status().Code)

	served := testutil.Metrics(t, reader)[telemetry.MetricServerOperationDuration]
	assert.EqualValues(t, 1, sumWhere(t, served, "mcp.method.name", "notifications/message"))
	assert.EqualValues(t, 1, sumWhere(t, served, "mcp.method.name", "notifications/resources/updated"))
	assert.EqualValues(t, 1, sumWhere(t, served, "mcp.method.name", "_OTHER"))
}

// The conventions' metrics: histograms of float seconds, unit "s", with
// the bucket boundaries the conventions recommend.
func TestConventionMetricsUnitsKindsAndBuckets(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	handler := func(ctx context.Context, req *ServerRequest) (any, error) {
		return map[string]any{"roots": []any{}}, nil
	}
	c := dialTest(t, []string{"-era", "legacy"}, WithMeterProvider(mp), WithServerRequestHandler(handler))
	_, err := c.Request(t.Context(), "test/serverRequest", map[string]any{"method": "roots/list"})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	<-c.Done()

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	want := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, "github.com/snodo/snodo", sm.Scope.Name)
		for _, m := range sm.Metrics {
			switch m.Name {
			case "mcp.client.operation.duration", "mcp.server.operation.duration", "mcp.client.session.duration":
			default:
				continue
			}
			seen[m.Name] = true
			assert.Equal(t, "s", m.Unit, m.Name)
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "%s is a float histogram, got %T", m.Name, m.Data)
			require.NotEmpty(t, h.DataPoints, m.Name)
			for _, p := range h.DataPoints {
				assert.Equal(t, want, p.Bounds, m.Name)
			}
		}
	}
	assert.Len(t, seen, 3, "%v", seen)
}

// The legacy handshake's initialize span carries the version its result
// chose, as the session's later spans do.
func TestInitializeSpanCarriesTheChosenVersion(t *testing.T) {
	tp, rec := traced(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c := dialTest(t, []string{"-era", "legacy"}, WithTracerProvider(tp), WithMeterProvider(mp))
	hs := spansNamed(rec, "initialize")
	require.Len(t, hs, 1)
	assert.Equal(t, c.ProtocolVersion(), spanAttrs(hs[0])["mcp.protocol.version"])
	op := testutil.Metrics(t, reader)[telemetry.MetricOperationDuration]
	found := false
	if h, ok := op.(metricdata.Histogram[float64]); assert.True(t, ok) {
		for _, p := range h.DataPoints {
			if m, _ := p.Attributes.Value("mcp.method.name"); m.AsString() == "initialize" {
				found = true
				v, _ := p.Attributes.Value("mcp.protocol.version")
				assert.Equal(t, c.ProtocolVersion(), v.AsString())
			}
		}
	}
	assert.True(t, found, "no duration for initialize")
}
