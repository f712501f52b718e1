package snodo

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/telemetry"
)

// instrument returns r with each of its requests traced and measured
// exactly as a Client's own requests are, by the same code: a CLIENT span
// named after the MCP method and the tool or prompt (a child of the span
// in the caller's ctx; r's Request runs under it, so the trace context r
// propagates is this span's), its attributes, progress and
// input_required events, error.type and status, and the
// mcp.client.operation.duration and requests-in-flight metrics.
//
// It is for a requester that reaches its servers some other way than
// through a Client: the remote package's client wraps its requests with
// it. A supervised client or a pool needs none: every request of theirs
// is a request of a member Client, traced there. transport is the
// network.transport attribute ("tcp" for a server across a network) and
// server names the server in metrics (snodo.server.name). tp and mp nil
// mean the global providers, followed as they change; with the default
// no-op ones a request costs nothing more. Over a nil r every request
// fails with errNoRequester, as the calls of a zero Calls do.
//
// The remote package reaches it through internal/connopts' Instrument,
// which calls the config's Instrument method below.
func instrument(r requester, tp trace.TracerProvider, mp metric.MeterProvider, transport, server string) *instrumented {
	if r == nil {
		r = noRequester{}
	}
	tel := telemetry.New(tp, mp)
	return &instrumented{r: r, site: site{tel: tel, meters: tel.ForEndpoint(transport, server), transport: transport}}
}

// Instrument is instrument, lent to package remote through
// internal/connopts (a config does no work of its own here: its type is
// how connopts reaches the root, typed).
func (*config) Instrument(r requester, tp trace.TracerProvider, mp metric.MeterProvider, transport, server string) connopts.Traced[RequestOption, Era] {
	return instrument(r, tp, mp, transport, server)
}

var _ connopts.Instrumenter[RequestOption, Era] = (*config)(nil)

// TraceSubscription starts tracing a subscription opened through in
// (traceSubscription), for package remote's Listen.
func (in *instrumented) TraceSubscription(ctx context.Context) (context.Context, connopts.SubscriptionTrace) {
	ctx, t := in.site.listenStarted(ctx)
	if t == nil {
		return ctx, nil // an interface that is nil, not a nil *subscriptionTrace
	}
	return ctx, t
}

// instrumented is a requester whose requests go through a site.
type instrumented struct {
	r    requester
	site site
}

func (in *instrumented) Request(ctx context.Context, method string, params any, opts ...RequestOption) (json.RawMessage, error) {
	if !in.site.tel.Tracing() && !in.site.meters.Live() {
		return in.r.Request(ctx, method, params, opts...) // nothing to record: no option is read
	}
	var co *engine.CallOptions
	if len(opts) > 0 {
		co = &engine.CallOptions{OnProgress: toConnProgress(settingsOf(opts...).OnProgress)}
	}
	ctx, o, params, co := in.site.begin(ctx, method, params, co)
	if o == nil {
		return in.r.Request(ctx, method, params, opts...)
	}
	if co != nil && co.OnProgress != nil {
		// The op's progress events, then the caller's function: the last
		// OnProgress wins.
		opts = append(opts[:len(opts):len(opts)], OnProgress(fromConnProgress(co.OnProgress)))
	}
	raw, err := in.r.Request(ctx, method, params, opts...)
	o.end(raw, err)
	return raw, err
}

func (in *instrumented) Era() Era { return in.r.Era() }
