package snodo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
	"github.com/snodo/snodo/internal/serverproc"
	"github.com/snodo/snodo/internal/substream"
	"github.com/snodo/snodo/internal/telemetry"
)

// WithTracerProvider makes the client's spans with tp: one client span
// per request or notification it sends (named after the MCP method and
// the tool or prompt), a server span per run of a server-request or
// notification handler, and a span per subscription and per subscription
// event, following the OpenTelemetry
// semantic conventions for MCP (docs/observability.md). Default: the
// global provider (otel.GetTracerProvider), followed as it changes;
// while that is the default no-op, tracing costs no allocation.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return errors.New("WithTracerProvider: nil provider")
		}
		c.tracerProvider = tp
		return nil
	}
}

// WithMeterProvider records the client's metrics with mp:
// mcp.client.operation.duration, mcp.client.session.duration and
// mcp.server.operation.duration (the client's handlers of what the
// server sends) from the MCP semantic conventions, and snodo's own (requests in flight, bytes,
// exits by cause, …; docs/observability.md lists them). Default: the
// global provider (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return errors.New("WithMeterProvider: nil provider")
		}
		c.meterProvider = mp
		return nil
	}
}

// site is where requests are traced and measured: a Client (its server,
// over a pipe), or a requester wrapped with Instrument (a server reached
// some other way). Every request of either passes through its begin and
// op.end: the one place operations are traced and measured.
type site struct {
	tel       *telemetry.Telemetry
	meters    *telemetry.Conn
	transport string        // network.transport
	version   func() string // the negotiated protocol version; nil or "" when unknown
}

// op is one traced or measured operation: one request (each
// input_required round is a request of its own). It exists only when
// tracing or metrics are on.
type op struct {
	s         *site
	method    string
	target    string // tool or prompt name, or resource URI
	span      trace.Span
	recording bool
	metering  bool
	start     time.Time
	id        atomic.Int64 // the last request ID sent for it
	opts      engine.CallOptions
	version   string // the version an initialize result chose, before the client has settled it
	// measured is the ctx of both of the op's measurements (requests
	// in flight at its begin and end, its duration): the request's ctx
	// detached from its cancellation, held in detached, so that the end
	// of a cancelled request is counted, at no allocation.
	measured context.Context
	detached telemetry.NoCancel
}

// begin starts an operation for method: a client span (child of the span
// in ctx) and the in-flight count. With tracing and metrics off it
// returns its arguments and a nil op, allocating nothing. params for
// tools/call, prompts/get and resources/read are marshalled here, once,
// to read the target (the connection passes the bytes through).
func (s *site) begin(ctx context.Context, method string, params any, opts *engine.CallOptions) (context.Context, *op, any, *engine.CallOptions) {
	tracing, metering := s.tel.Tracing(), s.meters.Live()
	if !tracing && !metering {
		return ctx, nil, params, opts
	}
	// The method and the target come from the caller (and may be a
	// server's data it passes along): bounded, like every value recorded.
	o := &op{s: s, method: telemetry.Bound(method, telemetry.MaxName), metering: metering, start: time.Now()}
	o.target, params = target(method, params)
	if opts != nil {
		o.opts = *opts
	}
	sent := o.opts.Sent
	o.opts.Sent = func(id int64) {
		o.id.Store(id)
		if sent != nil {
			sent(id)
		}
	}
	if tracing {
		name := o.method
		if o.target != "" && !namesResource(method) { // a URI would make span names high-cardinality
			name += " " + o.target
		}
		ctx, o.span = s.tel.StartClient(ctx, name)
		o.recording = o.span.IsRecording()
		if o.recording {
			o.span.SetAttributes(o.attributes()...)
			if progress := o.opts.OnProgress; progress != nil {
				o.opts.OnProgress = func(p engine.Progress) {
					o.progressEvent(p)
					progress(p)
				}
			}
		}
	}
	if metering {
		o.measured = o.detached.Detach(ctx)
		s.meters.RequestStarted(o.measured)
	}
	return ctx, o, params, &o.opts
}

// target reads the tool or prompt name (or the resource URI) from params
// and returns params as bytes, so that the connection does not marshal
// them again. completion/complete names a prompt when its ref is a
// ref/prompt (a ref/resource holds a URI template, not a resource URI:
// no target then).
func target(method string, params any) (string, any) {
	switch method {
	case "tools/call", "prompts/get", "completion/complete":
	default:
		if !namesResource(method) {
			return "", params
		}
	}
	raw, err := jsonrpc.Marshal(params)
	if err != nil || len(raw) == 0 {
		return "", params // the connection reports the error
	}
	obj, key := json.RawMessage(raw), "name"
	switch {
	case namesResource(method):
		key = "uri"
	case method == "completion/complete":
		obj, _ = jsonrpc.Member(raw, "ref")
		if kind, _ := jsonrpc.Member(obj, "type"); string(kind) != `"ref/prompt"` {
			return "", json.RawMessage(raw)
		}
	}
	member, _ := jsonrpc.Member(obj, key)
	return telemetry.Bound(jsonrpc.Unquote(member), telemetry.MaxName), json.RawMessage(raw)
}

// namesResource: the requests whose params name a resource by its uri
// (mcp.resource.uri).
func namesResource(method string) bool {
	switch method {
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

func (s *site) protocolVersion() string {
	if s.version == nil {
		return ""
	}
	return s.version()
}

// attributes are the span and metric attributes known before the answer.
func (o *op) attributes() []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		attribute.String(telemetry.AttrMethodName, o.method),
		attribute.String(telemetry.AttrNetworkTransport, o.s.transport))
	if v := cmp.Or(o.s.protocolVersion(), o.version); v != "" {
		attrs = append(attrs, attribute.String(telemetry.AttrProtocolVersion, v))
	}
	if o.method == "tools/call" { // a tool call, whether or not it names its tool
		attrs = append(attrs, attribute.String(telemetry.AttrOperationName, telemetry.OperationExecute))
	}
	if o.target != "" {
		switch o.method {
		case "tools/call":
			attrs = append(attrs, attribute.String(telemetry.AttrToolName, o.target))
		case "prompts/get", "completion/complete":
			attrs = append(attrs, attribute.String(telemetry.AttrPromptName, o.target))
		default: // namesResource
			attrs = append(attrs, attribute.String(telemetry.AttrResourceURI, o.target))
		}
	}
	return attrs
}

func (o *op) progressEvent(p engine.Progress) {
	attrs := []attribute.KeyValue{attribute.Float64(telemetry.AttrProgress, p.Progress)}
	if p.Total != 0 {
		attrs = append(attrs, attribute.Float64(telemetry.AttrProgressTotal, p.Total))
	}
	if p.Message != "" {
		attrs = append(attrs, attribute.String(telemetry.AttrProgressMessage, telemetry.Bound(p.Message, telemetry.MaxText)))
	}
	o.span.AddEvent(telemetry.EventProgress, trace.WithAttributes(attrs...))
}

// inputRequired adds an event when raw is an input_required result: the
// call is retried as a new request (a span of its own) once the inputs are
// fulfilled.
func (o *op) inputRequired(raw json.RawMessage) {
	if rt, _ := jsonrpc.Member(raw, "resultType"); string(rt) != `"`+resultInputRequired+`"` {
		return
	}
	var ir struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	_ = json.Unmarshal(raw, &ir)
	o.span.AddEvent(telemetry.EventInputRequired, trace.WithAttributes(
		attribute.Int(telemetry.AttrInputRequests, len(ir.InputRequests))))
}

// end closes the operation with its outcome: the span's request ID,
// error attributes and status, and the duration metric.
func (o *op) end(raw json.RawMessage, err error) {
	if o == nil {
		return
	}
	errType, statusCode, desc := classify(o.method, raw, err)
	if o.method == "initialize" && err == nil && o.s.protocolVersion() == "" {
		o.version = chosenVersion(raw)
	}
	if o.span != nil {
		if o.recording {
			if o.version != "" {
				o.span.SetAttributes(attribute.String(telemetry.AttrProtocolVersion, o.version))
			}
			if id := o.id.Load(); id != 0 {
				o.span.SetAttributes(attribute.String(telemetry.AttrRequestID, strconv.FormatInt(id, 10)))
			}
			if err == nil {
				o.inputRequired(raw)
			}
			if errType != "" {
				o.span.SetAttributes(attribute.String(telemetry.AttrErrorType, errType))
				if statusCode != "" {
					o.span.SetAttributes(attribute.String(telemetry.AttrRPCStatusCode, statusCode))
				}
				o.span.SetStatus(codes.Error, desc)
			}
		}
		o.span.End()
	}
	if o.metering {
		o.s.meters.RequestEnded(o.measured)
		attrs := slices.DeleteFunc(o.attributes(), func(kv attribute.KeyValue) bool {
			return kv.Key == telemetry.AttrResourceURI // opt-in for metrics: high cardinality
		})
		if errType != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrErrorType, errType))
			if statusCode != "" {
				attrs = append(attrs, attribute.String(telemetry.AttrRPCStatusCode, statusCode))
			}
		}
		o.s.meters.Operation(o.measured, time.Since(o.start).Seconds(), attrs)
	}
}

// chosenVersion is the protocolVersion of an initialize result (bounded:
// the server wrote it), so that the handshake's own span and duration
// carry the version it settled, as the session's later ones do.
func chosenVersion(raw json.RawMessage) string {
	v, _ := jsonrpc.Member(raw, "protocolVersion")
	return telemetry.Bound(jsonrpc.Unquote(v), telemetry.MaxName)
}

// classify turns an outcome into error.type (empty on success),
// rpc.response.status_code (the code of an error response the server
// sent) and a status description (the error's message, bounded).
//
// error.type is the code as a string for an error response from the
// server (every JSON-RPC error is an error on the client's side), and
// "tool_error" for a tools/call result with isError set. When no error
// response came (the conventions' "timeouts or transport errors"), it is
// a short word instead, so that it never passes for a code the server
// sent: "timeout" (snodo's own -32001), "connection_closed" (its -32000),
// "write_queue_full", "invalid_params" (refused before sending),
// "cancelled" and "deadline_exceeded" (the caller's ctx), the
// multi-round-trip failures, and "_OTHER" for anything else.
func classify(method string, raw json.RawMessage, err error) (errType, statusCode, desc string) {
	if err == nil {
		if method == "tools/call" {
			if v, _ := jsonrpc.Member(raw, "isError"); string(v) == "true" {
				return telemetry.ErrorTypeToolError, "", "the tool reported an error (isError)"
			}
		}
		return "", "", ""
	}
	desc = telemetry.Bound(err.Error(), telemetry.MaxText)
	// snodo's own wrappers first: they may wrap a handler's *Error, which
	// is no response of the server's.
	switch {
	case errors.Is(err, ErrTooManyInputRounds):
		return "too_many_input_rounds", "", desc
	case errors.Is(err, ErrUnknownResultType):
		return "unknown_result_type", "", desc
	case errors.Is(err, ErrInputRequest):
		return "input_request_failed", "", desc
	}
	var e *Error
	if errors.As(err, &e) && !e.Local() {
		code := strconv.Itoa(e.Code)
		return code, code, telemetry.Bound(e.Message, telemetry.MaxText)
	}
	switch {
	case errors.Is(err, ErrTimeout):
		return "timeout", "", desc
	case errors.Is(err, ErrConnectionClosed):
		return "connection_closed", "", desc
	case errors.Is(err, ErrWriteQueueFull):
		return "write_queue_full", "", desc
	case errors.Is(err, ErrInvalidParams):
		return "invalid_params", "", desc
	case errors.Is(err, context.Canceled):
		return "cancelled", "", desc
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded", "", desc
	case e != nil: // a local error of a requester's, without the sentinels
		switch e.Code {
		case CodeTimeout:
			return "timeout", "", desc
		case CodeConnectionClosed:
			return "connection_closed", "", desc
		case CodeInvalidParams:
			return "invalid_params", "", desc
		}
	}
	return telemetry.ErrorTypeOther, "", desc
}

// notification is one notification the client sends, traced (a CLIENT
// span, whose context the connection carries in params._meta) and
// measured (mcp.client.operation.duration, until the line is written:
// stdio has no acknowledgement).
type notification struct {
	c        *Client
	ctx      context.Context
	method   string
	span     trace.Span
	metering bool
	start    time.Time
}

func (c *Client) notificationStarted(ctx context.Context, method string, tracing, metering bool) *notification {
	n := &notification{c: c, ctx: ctx, method: telemetry.Bound(method, telemetry.MaxName), metering: metering, start: time.Now()}
	if tracing {
		n.ctx, n.span = c.tel.StartClient(ctx, n.method)
		if n.span.IsRecording() {
			n.span.SetAttributes(n.attributes()...)
		}
	}
	return n
}

// attributes: those of a request's operation, without a target.
func (n *notification) attributes() []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(telemetry.AttrMethodName, n.method),
		attribute.String(telemetry.AttrNetworkTransport, telemetry.TransportPipe),
	}
	if v := n.c.version(); v != "" {
		attrs = append(attrs, attribute.String(telemetry.AttrProtocolVersion, v))
	}
	return attrs
}

func (n *notification) end(err error) {
	errType, _, desc := "", "", ""
	if err != nil {
		errType, _, desc = classify(n.method, nil, err)
	}
	if n.span != nil {
		if errType != "" && n.span.IsRecording() {
			n.span.SetAttributes(attribute.String(telemetry.AttrErrorType, errType))
			n.span.SetStatus(codes.Error, desc)
		}
		n.span.End()
	}
	if n.metering {
		attrs := n.attributes()
		if errType != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrErrorType, errType))
		}
		n.c.meters.Operation(n.ctx, time.Since(n.start).Seconds(), attrs)
	}
}

// serverRequestSpan starts the span of a server-request handler run (a
// SERVER span, as the conventions have it for requests the server
// initiates). Its parent is the span whose context the server put in
// params._meta (a legacy server request joins the server's trace), or
// else the span in ctx (an input request of an input_required round runs
// under the caller of CallTool, ReadResource or GetPrompt).
func (c *Client) serverRequestSpan(ctx context.Context, req *ServerRequest) (context.Context, trace.Span) {
	if !c.tel.Tracing() {
		return ctx, nil
	}
	var id []attribute.KeyValue
	if len(req.ID) > 0 && req.ID[0] != 'n' { // no attribute for a null id
		s := string(req.ID)
		if s[0] == '"' {
			s = jsonrpc.Unquote(req.ID)
		}
		id = []attribute.KeyValue{attribute.String(telemetry.AttrRequestID, telemetry.Bound(s, telemetry.MaxName))}
	}
	return c.receiverSpan(ctx, req.Method, req.Params, id...)
}

// receiverSpan starts the SERVER span of a request or notification the
// server initiated: the Client's site's (receiverSpan).
func (c *Client) receiverSpan(ctx context.Context, method string, params json.RawMessage, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	return c.site.receiverSpan(ctx, method, params, extra...)
}

// receiverSpan starts the SERVER span of a request or notification the
// server initiated, as the conventions have the receiver do: its parent
// is the server's span when params._meta carries its context, with the
// span in ctx (the ambient context) as a link; otherwise the span in
// ctx. Its attributes are the method (bounded: the server chose it), the
// site's transport, the version (when the site knows it), the resource
// URI of a resource update, and extra.
func (s *site) receiverSpan(ctx context.Context, method string, params json.RawMessage, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	var opts [2]trace.SpanStartOption
	n := 0
	opts[n] = trace.WithSpanKind(trace.SpanKindServer)
	n++
	if server := telemetry.Extract(ctx, params); trace.SpanContextFromContext(server).IsRemote() {
		if local := trace.SpanContextFromContext(ctx); local.IsValid() {
			opts[n] = trace.WithLinks(trace.Link{SpanContext: local})
			n++
		}
		ctx = server // the server's span, and its baggage when propagated
	}
	name := telemetry.Bound(method, telemetry.MaxName)
	ctx, span := s.tel.Tracer().Start(ctx, name, opts[:n]...)
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 4+len(extra))
		attrs = append(attrs,
			attribute.String(telemetry.AttrMethodName, name),
			attribute.String(telemetry.AttrNetworkTransport, s.transport))
		if v := s.protocolVersion(); v != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrProtocolVersion, v))
		}
		if method == methodResourceUpdated {
			var p struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(params, &p) == nil && p.URI != "" {
				attrs = append(attrs, attribute.String(telemetry.AttrResourceURI, telemetry.Bound(p.URI, telemetry.MaxName)))
			}
		}
		span.SetAttributes(append(attrs, extra...)...)
	}
	return ctx, span
}

// notificationReceived starts tracing and timing one run of the
// WithNotificationHandler handler: a SERVER span (receiverSpan) and
// mcp.server.operation.duration. The function it returns ends both; nil
// when telemetry is off.
func (c *Client) notificationReceived(ctx context.Context, n *Notification) (context.Context, func(panicked bool)) {
	tracing, metering := c.tel.Tracing(), c.meters.Live()
	if !tracing && !metering {
		return ctx, nil
	}
	var span trace.Span
	if tracing {
		ctx, span = c.receiverSpan(ctx, n.Method, n.Params)
	}
	start := time.Now()
	return ctx, func(panicked bool) {
		var err error
		if panicked {
			err = errNotificationHandlerPanicked
		}
		c.handled(ctx, n.Method, span, metering, start, err)
	}
}

// errNotificationHandlerPanicked marks the span of a notification
// handler's run that panicked.
var errNotificationHandlerPanicked = errors.New("the notification handler panicked")

// handled ends the span and records the duration of a notification
// handler's run. A notification has no answer, so no code: a panic is
// its one error (_OTHER).
func (c *Client) handled(ctx context.Context, method string, span trace.Span, metering bool, start time.Time, err error) {
	var outcome []attribute.KeyValue
	if err != nil {
		outcome = append(outcome, attribute.String(telemetry.AttrErrorType, telemetry.ErrorTypeOther))
	}
	if span != nil {
		if err != nil && span.IsRecording() {
			span.SetAttributes(outcome...)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	if metering {
		attrs := []attribute.KeyValue{
			attribute.String(telemetry.AttrMethodName, servedMethod(method)),
			attribute.String(telemetry.AttrNetworkTransport, telemetry.TransportPipe),
		}
		if v := c.version(); v != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrProtocolVersion, v))
		}
		c.meters.Served(ctx, time.Since(start).Seconds(), append(attrs, outcome...))
	}
}

// served records a handler's run: on its span, the code the answer
// carries (rpc.response.status_code), and error.type and an Error status
// when that code is an error on the receiving side; in
// mcp.server.operation.duration, the same with the method, transport and
// version. cancelled reports that the handler's ctx ended first (the
// server cancelled the request, the call it served ended, or the
// connection stopped): no answer goes out then. ctx is the measurements'
// (the handler's, detached).
func (c *Client) served(ctx context.Context, method string, span trace.Span, metering bool, start time.Time, cancelled bool, err error) {
	recording := span != nil && span.IsRecording()
	if !recording && !metering {
		if span != nil {
			span.End()
		}
		return
	}
	errType, code, desc := classifyServed(cancelled, err)
	var outcome []attribute.KeyValue
	if code != "" {
		outcome = append(outcome, attribute.String(telemetry.AttrRPCStatusCode, code))
	}
	if errType != "" {
		outcome = append(outcome, attribute.String(telemetry.AttrErrorType, errType))
	}
	if span != nil {
		if recording {
			span.SetAttributes(outcome...)
			if errType != "" {
				span.SetStatus(codes.Error, desc)
			}
		}
		span.End()
	}
	if metering {
		ctx := telemetry.Detached(ctx) // as it is when the caller detached it
		attrs := []attribute.KeyValue{
			attribute.String(telemetry.AttrMethodName, servedMethod(method)),
			attribute.String(telemetry.AttrNetworkTransport, telemetry.TransportPipe),
		}
		if v := c.version(); v != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrProtocolVersion, v))
		}
		c.meters.Served(ctx, time.Since(start).Seconds(), append(attrs, outcome...))
		c.meters.HandlerEnded(ctx)
	}
}

// servedMethod is the mcp.method.name of a server request or
// notification in metrics: the methods MCP defines for a server to send,
// and "_OTHER" for any other. The server chooses the method; every
// distinct value would be a series of its own, kept for the life of the
// program.
func servedMethod(method string) string {
	switch method {
	case mcpmethod.Sampling, mcpmethod.Elicitation, mcpmethod.ListRoots, mcpmethod.Ping,
		methodToolsListChanged, methodPromptsListChanged,
		methodResourcesListChanged, methodResourceUpdated,
		"notifications/message", "notifications/progress", "notifications/cancelled",
		"notifications/elicitation/complete":
		return method
	}
	return telemetry.ErrorTypeOther
}

// classifyServed is classify for the client's side of a request the
// server sent. A handler's *Error is answered with its code; any other
// error (or a panic) with -32603. As the conventions have it for the
// receiver of a request, the codes that say the sender asked for
// something it could not have (-32700, -32600, -32601, -32602, and
// -32002, resource not found) are recorded but are no error of the
// receiver's: no error.type, status left unset.
func classifyServed(cancelled bool, err error) (errType, statusCode, desc string) {
	if cancelled {
		return "cancelled", "", "the request was cancelled before the handler answered; no answer was sent"
	}
	if err == nil {
		return "", "", ""
	}
	code, msg := CodeInternalError, err.Error()
	var e *Error
	if errors.As(err, &e) {
		code, msg = e.Code, e.Message
	}
	statusCode = strconv.Itoa(code)
	switch code {
	case codeParseError, codeInvalidRequest, CodeMethodNotFound, CodeInvalidParams, codeResourceNotFound:
		return "", statusCode, ""
	}
	return statusCode, statusCode, telemetry.Bound(msg, telemetry.MaxText)
}

// sessionEnded records the session's duration and the exit cause: a
// session the client ended (Close, its owner leaving) has no error.type;
// any other end has the cause.
func (c *Client) sessionEnded(started time.Time) func(error) {
	return func(reason error) {
		if !c.meters.Live() {
			return
		}
		cause := serverproc.ExitCause(reason)
		errType := cause
		if cause == "closed" || cause == "owner_exited" {
			errType = ""
		}
		c.meters.Session(time.Since(started).Seconds(), c.version(), errType)
		if limit := sandboxLimit(reason); limit != "" {
			c.meters.SandboxStopped(limit)
		}
	}
}

// eraHandler adds the connection's era to every log record once Connect
// has settled it (the connection adds the server's name and pid).
type eraHandler struct {
	slog.Handler
	era *atomic.Pointer[string]
}

func (h eraHandler) Handle(ctx context.Context, r slog.Record) error {
	if e := h.era.Load(); e != nil {
		r.AddAttrs(slog.String("era", *e))
	}
	return h.Handler.Handle(ctx, r)
}

func (h eraHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return eraHandler{Handler: h.Handler.WithAttrs(attrs), era: h.era}
}

func (h eraHandler) WithGroup(name string) slog.Handler {
	return eraHandler{Handler: h.Handler.WithGroup(name), era: h.era}
}

// observeSubscription sets the hooks that trace and measure a
// subscription, all through its subscriptionTrace (the site's
// listenStarted): the spans, the queue depth at each event and the
// overflows. With telemetry off it sets nothing.
func (c *Client) observeSubscription(ctx context.Context, o *substream.Options) context.Context {
	ctx, t := c.site.listenStarted(ctx)
	if t == nil {
		return ctx
	}
	o.Ended = t.end
	if t.recording || t.metering {
		o.Queued = t.queued
	}
	return ctx
}

// subscriptionTrace traces and measures one subscription exactly as a
// Client's Listen does, by the same code: a CLIENT span
// subscriptions/listen from Listen until the subscription ends, a SERVER
// span per event (see Event), and the metrics
// snodo.client.subscription.queue.depth (see Queued) and
// snodo.client.subscription.overflows (see End). traceSubscription starts
// one for a subscription that a requester made by Instrument opens some
// other way than a request (the remote package's Listen). Event and
// Queued may be called from any goroutine, End once after the last of
// them; on a nil *subscriptionTrace (tracing and metrics off) all do
// nothing and cost nothing.
type subscriptionTrace struct {
	s         *site
	ctx       context.Context // the span's: the parent or link of each event's
	span      trace.Span      // nil when tracing is off
	recording bool
	metering  bool
}

// traceSubscription starts tracing and measuring a subscription opened
// through r, a requester that instrument returned: the
// subscriptions/listen CLIENT span, a child of the span in ctx, with the
// attributes of r's request spans (mcp.method.name, network.transport),
// and the subscription metrics, with the attributes of r's other
// connection metrics (network.transport, snodo.server.name). Open the
// subscription with the returned ctx, so that the trace context it
// carries to the server is this span's, record each event with Event and
// Queued and the end with End. When r did not come from Instrument, or
// neither its tracer provider nor its meter provider records (the
// default no-op ones), it returns ctx and nil. The remote package reaches
// it through the TraceSubscription method of what instrument returned
// (internal/connopts' Traced).
func traceSubscription(ctx context.Context, r requester) (context.Context, *subscriptionTrace) {
	in, ok := r.(*instrumented)
	if !ok {
		return ctx, nil
	}
	return in.site.listenStarted(ctx)
}

// listenStarted starts a subscription's span (when tracing) and decides
// whether it is measured, once, as a request's op does; ctx and nil when
// both are off.
func (s *site) listenStarted(ctx context.Context) (context.Context, *subscriptionTrace) {
	tracing, metering := s.tel.Tracing(), s.meters.Live()
	if !tracing && !metering {
		return ctx, nil
	}
	t := &subscriptionTrace{s: s, ctx: ctx, metering: metering}
	if !tracing {
		return ctx, t
	}
	ctx, t.span = s.tel.StartClient(ctx, mcpmethod.Listen)
	t.ctx = ctx
	t.recording = t.span.IsRecording()
	if t.recording {
		attrs := []attribute.KeyValue{
			attribute.String(telemetry.AttrMethodName, mcpmethod.Listen),
			attribute.String(telemetry.AttrNetworkTransport, s.transport),
		}
		if v := s.protocolVersion(); v != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrProtocolVersion, v))
		}
		t.span.SetAttributes(attrs...)
	}
	return ctx, t
}

// queued is the Queued hook of a local subscription: an event queued for
// the reader, with the queue's depth then.
func (t *subscriptionTrace) queued(_ int64, method string, params json.RawMessage, depth int) {
	t.Queued(depth)
	t.Event(Event{Method: method, Params: params})
}

// Queued records depth, the number of events waiting for the reader just
// after one was queued (snodo.client.subscription.queue.depth: one
// sample per queued event). An event that
// goes to no queue (to a ListenTo actor, which has its own mailbox) has
// no depth: call Event alone.
func (t *subscriptionTrace) Queued(depth int) {
	if t != nil && t.metering {
		t.s.meters.QueueDepth(depth)
	}
}

// Event records a notification the server sent on the subscription as
// the conventions record any notification a peer initiates: a SERVER
// span, a point in time (the client queues the event; the reader's
// processing is the program's). Its parent is the server's span when the
// event's _meta carries one, linked to the subscriptions/listen span
// (the ambient context); otherwise that span is its parent. A
// notification has no JSON-RPC id, so no jsonrpc.request.id: the listen
// span, parent or link, says which subscription it came on. Nothing is
// recorded when the listen span is not (a sampler dropped it).
func (t *subscriptionTrace) Event(ev Event) {
	if t == nil || !t.recording {
		return
	}
	_, span := t.s.receiverSpan(t.ctx, ev.Method, ev.Params)
	span.End()
}

// End ends the subscriptions/listen span with why the subscription ended,
// as Subscription.Err reads: nil (a graceful end), snodo.ErrSubscriptionClosed
// and snodo.ErrOwnerExited (the caller ended it) leave the status unset; any
// other reason sets error.type and an Error status (snodo.ErrSubscriptionQueueFull
// "queue_full", snodo.ErrSubscriptionTeardown "server_teardown", an error response
// its code, a closed connection "connection_closed", …). A subscription
// that ended with snodo.ErrSubscriptionQueueFull is counted once in
// snodo.client.subscription.overflows. Call it once.
func (t *subscriptionTrace) End(err error) {
	if t != nil {
		t.end(0, err)
	}
}

// end is End with the listen request's JSON-RPC id (0: none, as across
// NATS, where the host's span has it).
func (t *subscriptionTrace) end(id int64, err error) {
	if t.metering && errors.Is(err, ErrSubscriptionQueueFull) {
		t.s.meters.Overflow()
	}
	if t.span == nil {
		return
	}
	if !t.recording {
		t.span.End()
		return
	}
	if id != 0 {
		t.span.SetAttributes(attribute.String(telemetry.AttrRequestID, strconv.FormatInt(id, 10)))
	}
	if err != nil && !errors.Is(err, ErrSubscriptionClosed) && !errors.Is(err, ErrOwnerExited) {
		errType, code, desc := classify(mcpmethod.Listen, nil, err)
		switch {
		case errors.Is(err, ErrSubscriptionQueueFull):
			errType = "queue_full"
		case errors.Is(err, ErrSubscriptionTeardown):
			errType = "server_teardown"
		}
		t.span.SetAttributes(attribute.String(telemetry.AttrErrorType, errType))
		if code != "" {
			t.span.SetAttributes(attribute.String(telemetry.AttrRPCStatusCode, code))
		}
		t.span.SetStatus(codes.Error, desc)
	}
	t.span.End()
}

// version is the negotiated protocol version for telemetry, "" until
// Connect has settled it: handler and event spans may start on other
// goroutines while the handshake still writes c.mcp.
func (c *Client) version() string {
	if v := c.sessionVersion.Load(); v != nil {
		return *v
	}
	return ""
}
