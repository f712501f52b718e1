package telemetry

import (
	"context"
	"encoding/hex"
	"encoding/json"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// Propagator is the propagator trace context travels with in _meta: the
// global TextMapPropagator once the program has set one (so W3C Baggage
// goes along when it is configured), and W3C Trace Context otherwise, so
// that traceparent is carried without any setup, as the MCP conventions
// recommend.
func Propagator() propagation.TextMapPropagator {
	p := otel.GetTextMapPropagator()
	if isGlobalDefault(p, &propagatorMemo) {
		return propagation.TraceContext{}
	}
	return p
}

// AppendTraceMembers appends the trace context of ctx to dst (usually
// nil; otherwise ending in a comma or an open brace) as JSON
// object members ("traceparent":"…", and "tracestate":"…" when there is
// one), separated by commas, without braces. When ctx carries no valid
// span context it returns dst unchanged, at no allocation: that is every
// request of a program that does not trace.
func AppendTraceMembers(dst []byte, ctx context.Context) []byte {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return dst
	}
	if p := otel.GetTextMapPropagator(); !isGlobalDefault(p, &propagatorMemo) {
		c := &memberCarrier{b: dst, n: len(dst)}
		p.Inject(ctx, c)
		return c.b
	}
	return appendTraceContext(dst, sc)
}

// appendTraceContext writes what propagation.TraceContext would inject,
// straight into dst: one allocation (dst's growth) instead of a carrier,
// a string builder and the member bytes.
func appendTraceContext(dst []byte, sc trace.SpanContext) []byte {
	ts := sc.TraceState()
	if ts.Len() > 0 {
		dst = append(dst, `"`+HeaderTracestate+`":`...)
		dst = jsonrpc.AppendString(dst, ts.String())
		dst = append(dst, ',')
	}
	if dst == nil {
		dst = make([]byte, 0, 72)
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := [1]byte{byte(sc.TraceFlags() & trace.FlagsSampled)}
	dst = append(dst, `"`+HeaderTraceparent+`":"00-`...)
	dst = hex.AppendEncode(dst, tid[:])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, sid[:])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, flags[:])
	return append(dst, '"')
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

// metaCarrier reads fields from an encoded _meta object.
type metaCarrier []byte

func (m metaCarrier) Get(key string) string {
	raw, err := jsonrpc.Member(m, key)
	if err != nil {
		return ""
	}
	return jsonrpc.Unquote(raw)
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
