package telemetry

import (
	"context"
	"encoding/json"
	"reflect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/internal/jsonrpc"
)

var defaultPropagatorType = reflect.TypeOf(otel.GetTextMapPropagator())

// Propagator is the propagator trace context travels with in _meta: the
// global TextMapPropagator once the program has set one (so W3C Baggage
// goes along when it is configured), and W3C Trace Context otherwise, so
// that traceparent is carried without any setup, as the MCP conventions
// recommend.
func Propagator() propagation.TextMapPropagator {
	p := otel.GetTextMapPropagator()
	if reflect.TypeOf(p) == defaultPropagatorType {
		return propagation.TraceContext{}
	}
	return p
}

// AppendTraceMembers appends the trace context of ctx to dst as JSON
// object members ("traceparent":"…", and "tracestate":"…" when there is
// one), separated by commas, without braces. When ctx carries no valid
// span context it returns dst unchanged, at no allocation: that is every
// request of a program that does not trace.
func AppendTraceMembers(dst []byte, ctx context.Context) []byte {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return dst
	}
	c := &memberCarrier{b: dst, n: len(dst)}
	Propagator().Inject(ctx, c)
	return c.b
}

// memberCarrier writes each injected field as a JSON member.
type memberCarrier struct {
	b []byte
	n int // len(b) before the first member
}

func (c *memberCarrier) Get(string) string { return "" }
func (c *memberCarrier) Keys() []string    { return nil }
func (c *memberCarrier) Set(key, value string) {
	if len(c.b) > c.n {
		c.b = append(c.b, ',')
	}
	c.b = jsonrpc.AppendString(c.b, key)
	c.b = append(c.b, ':')
	c.b = jsonrpc.AppendString(c.b, value)
}

// Extract returns ctx with the remote span context (and baggage, if the
// propagator carries it) found in params._meta, for a server request or
// an event whose sender traced it. Params without a usable _meta leave
// ctx as it is.
func Extract(ctx context.Context, params json.RawMessage) context.Context {
	meta, err := jsonrpc.Member(params, "_meta")
	if err != nil || len(meta) == 0 || meta[0] != '{' {
		return ctx
	}
	return Propagator().Extract(ctx, metaCarrier(meta))
}

// RemoteSpanContext is the span context a sender put in params._meta;
// invalid when there is none.
func RemoteSpanContext(params json.RawMessage) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), params))
}

// metaCarrier reads fields from an encoded _meta object.
type metaCarrier []byte

func (m metaCarrier) Get(key string) string {
	raw, err := jsonrpc.Member(m, key)
	if err != nil || len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
func (m metaCarrier) Set(string, string) {}
func (m metaCarrier) Keys() []string {
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(m, &keys)
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	return out
}
