package telemetry

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/snodo/snodo/handlers"
)

// Meters are the instruments of one meter provider. Every method is safe
// on a nil *Meters (it records nothing) and for concurrent use.
type Meters struct {
	opDuration      metric.Float64Histogram
	servedDuration  metric.Float64Histogram
	sessionDuration metric.Float64Histogram
	requestsActive  metric.Int64UpDownCounter
	handlersActive  metric.Int64UpDownCounter
	handlersRefused metric.Int64Counter
	queueDepth      metric.Int64Histogram
	overflows       metric.Int64Counter
	dropped         metric.Int64Counter
	restarts        metric.Int64Counter
	giveUps         metric.Int64Counter
	exits           metric.Int64Counter
	sandboxStops    metric.Int64Counter
	io              metric.Int64Counter
}

// meters makes the instruments. An instrument the provider refuses stays
// a no-op (the API returns one along with the error), so a bad provider
// costs measurements, never a failed Connect.
func meters(mp metric.MeterProvider) *Meters {
	m := mp.Meter(ScopeName)
	b := metric.WithExplicitBucketBoundaries(DurationBuckets...)
	ms := &Meters{}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, _ := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	ms.opDuration, _ = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"), b,
		metric.WithDescription("The duration of the MCP request or notification as observed on the client, from the time it was sent until the response was received (a notification: until it was written)."))
	ms.servedDuration, _ = m.Float64Histogram(MetricServerOperationDuration, metric.WithUnit("s"), b,
		metric.WithDescription("The duration of a request the MCP server sent, as observed on the client that received it, from the time its handler started until it answered."))
	ms.sessionDuration, _ = m.Float64Histogram(MetricSessionDuration, metric.WithUnit("s"), b,
		metric.WithDescription("The duration of the MCP session (one connection to a server process) as observed on the client."))
	ms.requestsActive, _ = m.Int64UpDownCounter(MetricRequestsActive, metric.WithUnit("{request}"),
		metric.WithDescription("Requests sent to MCP servers and waiting for their answer."))
	ms.handlersActive, _ = m.Int64UpDownCounter(MetricServerRequestsActive, metric.WithUnit("{request}"),
		metric.WithDescription("Server-to-client requests whose handler is running."))
	ms.handlersRefused = counter(MetricServerRequestsRefuse, "{request}", "Server-to-client requests refused (-32603) because the bound of handlers running at once was reached.")
	ms.queueDepth, _ = m.Int64Histogram(MetricQueueDepth, metric.WithUnit("{event}"),
		metric.WithDescription("Events waiting for the subscription's reader, sampled as each event is queued."))
	ms.overflows = counter(MetricQueueOverflows, "{subscription}", "Subscriptions ended because their reader fell behind by more than the queue bound.")
	ms.dropped = counter(MetricNotificationsDropped, "{notification}", "Server notifications dropped: claimed by no request, subscription or handler, or over a queue bound.")
	ms.restarts = counter(MetricRestarts, "{restart}", "Server processes restarted by a supervisor.")
	ms.giveUps = counter(MetricGiveUps, "{supervisor}", "Supervisors that stopped restarting a server (restart intensity exceeded).")
	ms.exits = counter(MetricServerExits, "{connection}", "Connections that stopped, by cause.")
	ms.sandboxStops = counter(MetricSandboxStops, "{connection}", "Servers stopped by their sandbox, by the limit they broke (memory, cpu).")
	ms.io = counter(MetricIO, "By", "Bytes written to servers' stdin (transmit) and read from their stdout (receive).")
	return ms
}

// Conn is the measurements of one connection, with its attribute sets
// built once, at the first measurement a live provider takes, so that
// counting a line or a request allocates nothing and a connection no
// provider measures keeps none. A nil *Conn records nothing.
type Conn struct {
	t       *Telemetry
	m       *Meters
	command string               // a child process's: its attributes are built from it when first needed
	attrs   []attribute.KeyValue // an endpoint's (ForEndpoint)
	built   atomic.Pointer[connSets]
}

// attributes are c's own attributes.
func (c *Conn) attributes() []attribute.KeyValue {
	if c.attrs != nil {
		return c.attrs
	}
	return ConnAttributes(c.command)
}

// connSets are a Conn's attribute sets as measurement options.
type connSets struct {
	base       []metric.AddOption // network.transport, snodo.server.command
	baseRecord []metric.RecordOption
	transmit   []metric.AddOption
	receive    []metric.AddOption
}

// sets returns c's attribute sets, building them the first time (two
// goroutines may both build them; one result is kept).
func (c *Conn) sets() *connSets {
	if s := c.built.Load(); s != nil {
		return s
	}
	set := func(extra ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), c.attributes()...), extra...)...))
	}
	base := set()
	s := &connSets{
		base:       []metric.AddOption{base},
		baseRecord: []metric.RecordOption{base},
		transmit:   []metric.AddOption{set(attribute.String(AttrIODirection, DirectionTransmit))},
		receive:    []metric.AddOption{set(attribute.String(AttrIODirection, DirectionReceive))},
	}
	if c.built.CompareAndSwap(nil, s) {
		return s
	}
	return c.built.Load()
}

// ConnAttributes are the low-cardinality attributes of every connection
// measurement.
func ConnAttributes(command string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String(AttrNetworkTransport, TransportPipe),
		attribute.String(AttrServerCommand, filepath.Base(command)),
	}
}

// ForConn returns the measurements of a connection to command; nil when
// metrics are off for good (a no-op provider was given). With the global
// provider still the default no-op, the instruments it returns forward
// to whatever provider is set later, and counting costs an atomic load.
func (t *Telemetry) ForConn(command string) *Conn {
	if t == nil || t.meters == nil {
		return nil
	}
	return &Conn{t: t, m: t.meters, command: command}
}

// ForEndpoint is ForConn for a server reached over transport
// (network.transport) under name (snodo.server.name) rather than run as
// a child process.
func (t *Telemetry) ForEndpoint(transport, name string) *Conn {
	return t.forAttrs([]attribute.KeyValue{
		attribute.String(AttrNetworkTransport, transport),
		attribute.String(AttrServerName, name),
	})
}

func (t *Telemetry) forAttrs(attrs []attribute.KeyValue) *Conn {
	if t == nil || t.meters == nil {
		return nil
	}
	return &Conn{t: t, m: t.meters, attrs: attrs}
}

// Written counts n bytes written to the server.
func (c *Conn) Written(n int) {
	if n > 0 && c.Live() { // no provider: not even the no-op instrument's call
		c.m.io.Add(context.Background(), int64(n), c.sets().transmit...)
	}
}

// Read counts n bytes read from the server.
func (c *Conn) Read(n int) {
	if n > 0 && c.Live() {
		c.m.io.Add(context.Background(), int64(n), c.sets().receive...)
	}
}

// Detached is ctx without its cancellation, values kept (baggage, the
// span an exemplar refers to): the SDK drops a measurement made with a
// ctx that is done, and the end of a cancelled request, or of a handler
// the server cancelled, must be counted all the same, or the counts of
// what is in flight drift up and the durations of cancelled requests go
// missing. Every measurement here detaches its ctx; a caller making
// several detaches once (a detached ctx is returned as it is).
func Detached(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// NoCancel is Detached without its allocation, for a caller that already
// has a struct of its own on the heap for the operation (a request's op):
// a NoCancel field there holds the ctx, and a pointer to it is the
// detached ctx, so detaching costs nothing more per operation. Like
// context.WithoutCancel, it is never done, has no deadline and no error
// (so context.Cause of it is nil too), and has ctx's values.
type NoCancel struct{ parent context.Context }

// Detach returns ctx as it is when it cannot be cancelled; otherwise d,
// holding ctx. Call it once per NoCancel, before any use of what it
// returns.
func (d *NoCancel) Detach(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	d.parent = ctx
	return d
}

// Deadline: none.
func (*NoCancel) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done: never.
func (*NoCancel) Done() <-chan struct{} { return nil }

// Err: never done, so nil.
func (*NoCancel) Err() error { return nil }

// Value is the value of the ctx given to Detach.
func (d *NoCancel) Value(key any) any { return d.parent.Value(key) }

// RequestStarted and RequestEnded track the requests in flight. Call
// both or neither (decide with Live once, before RequestStarted).
func (c *Conn) RequestStarted(ctx context.Context) {
	if c != nil {
		c.m.requestsActive.Add(Detached(ctx), 1, c.sets().base...)
	}
}

// RequestEnded: see RequestStarted.
func (c *Conn) RequestEnded(ctx context.Context) {
	if c != nil {
		c.m.requestsActive.Add(Detached(ctx), -1, c.sets().base...)
	}
}

// HandlerStarted and HandlerEnded track the server-request handlers
// running. Call both or neither, as RequestStarted and RequestEnded.
func (c *Conn) HandlerStarted(ctx context.Context) {
	if c != nil {
		c.m.handlersActive.Add(Detached(ctx), 1, c.sets().base...)
	}
}

// HandlerEnded: see HandlerStarted.
func (c *Conn) HandlerEnded(ctx context.Context) {
	if c != nil {
		c.m.handlersActive.Add(Detached(ctx), -1, c.sets().base...)
	}
}

// HandlerRefused counts a server request refused over the bound.
func (c *Conn) HandlerRefused() {
	if c != nil {
		c.m.handlersRefused.Add(context.Background(), 1, c.sets().base...)
	}
}

// Dropped counts a notification dropped for reason (a short fixed word:
// "unclaimed", "unknown_subscription", "progress_overflow", …).
func (c *Conn) Dropped(reason string) {
	if c.Live() {
		c.m.dropped.Add(context.Background(), 1, c.with(attribute.String(AttrDropReason, reason)))
	}
}

// QueueDepth records the depth of a subscription's queue after an event
// was queued.
func (c *Conn) QueueDepth(n int) {
	if c != nil {
		c.m.queueDepth.Record(context.Background(), int64(n), c.sets().baseRecord...)
	}
}

// Overflow counts a subscription ended by a full queue.
func (c *Conn) Overflow() {
	if c != nil {
		c.m.overflows.Add(context.Background(), 1, c.sets().base...)
	}
}

// Exited counts a connection's stop by cause (a short fixed word).
func (c *Conn) Exited(cause string) {
	if c.Live() {
		c.m.exits.Add(context.Background(), 1, c.with(attribute.String(AttrExitCause, cause)))
	}
}

// SandboxStopped counts a server stopped by its sandbox, with the limit
// it broke ("memory", "cpu").
func (c *Conn) SandboxStopped(limit string) {
	if c.Live() {
		c.m.sandboxStops.Add(context.Background(), 1, c.with(attribute.String(AttrSandboxLimit, limit)))
	}
}

// Restarted counts a supervisor's restart of the server.
func (c *Conn) Restarted() {
	if c != nil {
		c.m.restarts.Add(context.Background(), 1, c.sets().base...)
	}
}

// GaveUp counts a supervisor giving up on the server.
func (c *Conn) GaveUp() {
	if c != nil {
		c.m.giveUps.Add(context.Background(), 1, c.sets().base...)
	}
}

// Session records the duration of a session that ended; errorType is ""
// for a clean end (the client closed it).
func (c *Conn) Session(seconds float64, version, errorType string) {
	if !c.Live() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(AttrNetworkTransport, TransportPipe)}
	if version != "" {
		attrs = append(attrs, attribute.String(AttrProtocolVersion, version))
	}
	if errorType != "" {
		attrs = append(attrs, attribute.String(AttrErrorType, errorType))
	}
	c.m.sessionDuration.Record(context.Background(), seconds, metric.WithAttributes(attrs...))
}

// Operation records the duration of one request with its attributes.
// attrs is the caller's to give: it is sorted in place (not copied, as
// metric.WithAttributes would).
func (c *Conn) Operation(ctx context.Context, seconds float64, attrs []attribute.KeyValue) {
	if c.Live() {
		c.m.opDuration.Record(Detached(ctx), seconds, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	}
}

// Served records the duration of one run of the handler of a request
// the server sent, with its attributes, taken as Operation takes them.
func (c *Conn) Served(ctx context.Context, seconds float64, attrs []attribute.KeyValue) {
	if c.Live() {
		c.m.servedDuration.Record(Detached(ctx), seconds, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	}
}

// Live reports whether measurements are recorded now: callers build
// attributes only when it is true.
func (c *Conn) Live() bool { return c != nil && c.t.Metering() }

func (c *Conn) with(kv attribute.KeyValue) metric.MeasurementOption {
	attrs := c.attributes()
	return metric.WithAttributes(append(append(make([]attribute.KeyValue, 0, len(attrs)+1), attrs...), kv)...)
}

// ConnConfig is the part of engine.Config only the module sets: the
// connection embeds it unexported, so its fields are reachable as
// cfg.Metrics from the root package yet absent from the connection
// package's documentation, and no user can name their types.
type ConnConfig struct {
	// Metrics, when set, counts the connection's bytes, dropped
	// notifications, refused server requests and its stop (by cause).
	// Nil: nothing is counted.
	Metrics *Conn
	// ObserveHandler, when set, wraps each run of the server-request
	// handler (dispatch.Config.Observe): tracing and counting it. Nil:
	// runs are not observed.
	ObserveHandler func(ctx context.Context, req *handlers.Request) (context.Context, func(answered error, panicked bool))
}

// SubscriptionHooks is the part of subscription.Options only the module
// sets: the subscription embeds it unexported, so its fields are
// reachable as o.Ended from the root package yet absent from the
// subscription package's documentation. None may block but Serve.
type SubscriptionHooks struct {
	// Queued runs on the connection's reader goroutine after an event
	// (method and params) was queued on subscription id, with the number
	// of events then waiting. Nil: not called.
	Queued func(id int64, method string, params json.RawMessage, depth int)
	// Ended runs once, as subscription id ends, with its Err (id is 0
	// when the request was never sent). Nil: not called.
	Ended func(id int64, err error)
	// Serve, when set, serves the subscription in place of the
	// subscriptions/listen request: the root package's legacy-era Listen,
	// which has no such request. It runs on the subscription's own
	// goroutine until ctx is done or it returns; it hands deliver what
	// the connection would (the acknowledgement as
	// notifications/subscriptions/acknowledged, then the events), from
	// any goroutine but one at a time, and returns the error that ends
	// the subscription (nil: a graceful end). The subscription's ID is 0.
	Serve func(ctx context.Context, deliver func(method string, params json.RawMessage)) error
}
