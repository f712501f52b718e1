package connopts

import (
	"context"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/subscription"
)

// SubscriptionTrace traces and measures one subscription opened through
// a Traced requester: Queued records the queue depth after an event was
// queued, Event a server notification's SERVER span, End the
// subscriptions/listen span's end with why. A nil SubscriptionTrace is
// off.
type SubscriptionTrace interface {
	Queued(depth int)
	Event(ev subscription.Event)
	End(err error)
}

// Traced is a requester (O is snodo.RequestOption, E snodo.Era) whose
// requests are traced and measured as a snodo.Client's are, by the same
// code, and which traces the subscriptions opened through it.
type Traced[O, E any] interface {
	calls.Requester[O, E]
	// TraceSubscription starts tracing a subscription opened through
	// this requester: open it with the returned ctx; nil when neither
	// tracing nor metrics record.
	TraceSubscription(ctx context.Context) (context.Context, SubscriptionTrace)
}

// Instrumenter is what the root's config lends for Instrument.
type Instrumenter[O, E any] interface {
	// Instrument wraps r; see the function Instrument.
	Instrument(r calls.Requester[O, E], tp trace.TracerProvider, mp metric.MeterProvider, transport, server string) Traced[O, E]
}

// Instrument wraps r (RO is snodo.RequestOption, E snodo.Era; O is
// snodo.Option, which names the root's config that does the work), a
// requester that reaches its servers some other way than through a
// snodo.Client (package remote's), so that its requests and
// subscriptions are traced and measured as a Client's are: a CLIENT span
// per request, its attributes and events, the request metrics.
// transport is network.transport, server snodo.server.name; nil
// providers mean the global ones. Over a nil r every request fails.
func Instrument[RO, E any, O ~func(PC) error, PC interface {
	*C
	Instrumenter[RO, E]
}, C any](r calls.Requester[RO, E], tp trace.TracerProvider, mp metric.MeterProvider, transport, server string) Traced[RO, E] {
	var c C
	return PC(&c).Instrument(r, tp, mp, transport, server)
}
