// Package seam holds what one package of this module lends the others
// without exporting it to users: functions package snodo and package
// supervisor set in their init, each documented where it is set. Nothing
// here is a user's to call, so nothing here counts as public surface.
package seam

import (
	"context"
	"log/slog"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/subscription"
)

// SubscriptionTrace traces and measures one subscription opened through
// an instrumented requester: Queued records the queue depth after an
// event was queued, Event a server notification's SERVER span, End the
// subscriptions/listen span's end with why. A nil SubscriptionTrace is
// off.
type SubscriptionTrace interface {
	Queued(depth int)
	Event(ev subscription.Event)
	End(err error)
}

var (
	// Instrument (set by snodo) wraps r, a snodo.Requester, so that its
	// requests are traced and measured as a Client's are, and returns the
	// wrapping snodo.Requester. transport is network.transport, server
	// snodo.server.name; nil providers mean the global ones.
	Instrument func(r any, tp trace.TracerProvider, mp metric.MeterProvider, transport, server string) any

	// TraceSubscription (set by snodo) starts tracing a subscription
	// opened through r, a requester Instrument returned: nil when r
	// traces and measures nothing.
	TraceSubscription func(ctx context.Context, r any) (context.Context, SubscriptionTrace)

	// TargetIsHTTP (set by snodo) reports whether t, a snodo.Target,
	// names a Streamable HTTP endpoint rather than a command.
	TargetIsHTTP func(t any) bool

	// SupervisorSetup (set by supervisor) is the actor system (nil: none
	// named) and the logger (one that discards: none named) that opts, a
	// []supervisor.Option, name; invalid options are an error.
	SupervisorSetup func(opts any) (*protoactor.ActorSystem, *slog.Logger, error)
)
