// Package seam holds what one package of this module lends the others
// without exporting it to users: functions package snodo and package
// supervisor set in their init, each documented where it is set. Nothing
// here is a user's to call, so nothing here counts as public surface.
package seam

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/subscription"
)

// RemoteSettings are what snodo options set on a client that reaches
// its server through hosts over NATS (package remote): each is its zero
// value where no option gave it.
type RemoteSettings struct {
	Timeout        time.Duration        // WithTimeout (negative: none)
	Handler        handlers.Func        // WithServerRequestHandler
	MaxInputRounds int                  // WithMaxInputRounds
	Capabilities   any                  // WithClientCapabilities: a snodo.ClientCapabilities, or nil
	Tracers        trace.TracerProvider // WithTracerProvider
	Meters         metric.MeterProvider // WithMeterProvider
	System         *protoactor.ActorSystem
	Logger         *slog.Logger
	// natsleg: WithEra and WithNotificationHandler (remote clients of the legacy era).
	Era    string                                                           // WithEra: "legacy" or "modern"; "" when not given
	Notify func(ctx context.Context, method string, params json.RawMessage) // WithNotificationHandler
}

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

// Shared is what a []snodo.Option says that the layers above a
// connection (a supervisor, a pool) share with it, so that each is given
// once, and what the snodo command reads back of a servers file's
// configuration for its own waits: nil or zero for what the options do
// not give.
type Shared struct {
	Logger        *slog.Logger            // snodo.WithLogger
	Meter         metric.MeterProvider    // snodo.WithMeterProvider
	System        *protoactor.ActorSystem // snodo.WithActorSystem
	Owner         *protoactor.PID         // snodo.WithOwner
	OriginServer  string                  // snodo.WithOrigin's Server
	OriginMember  string                  // and Member
	Timeout       time.Duration           // snodo.WithTimeout (negative: none)
	ShutdownGrace time.Duration           // snodo.WithShutdownGrace
	Era           bool                    // snodo.WithEra was given: no era detection
}

var (
	// SharedOf (set by snodo) applies opts, a []snodo.Option, in order
	// and returns what they give the layers above a connection; a nil or
	// invalid option is an error.
	SharedOf func(opts any) (Shared, error)

	// Unowned (set by snodo) is a snodo.Option that takes back the owner
	// actor an earlier snodo.WithOwner gave: a supervisor's connections
	// are owned by the supervisor, never by its owner, so that no watch
	// outlives one of them (each would be a dead letter).
	Unowned any

	// Instrument (set by snodo) wraps r, a snodo.Requester, so that its
	// requests are traced and measured as a Client's are, and returns the
	// wrapping snodo.Requester. transport is network.transport, server
	// snodo.server.name; nil providers mean the global ones.
	Instrument func(r any, tp trace.TracerProvider, mp metric.MeterProvider, transport, server string) any

	// TraceSubscription (set by snodo) starts tracing a subscription
	// opened through r, a requester Instrument returned: nil when r
	// traces and measures nothing.
	TraceSubscription func(ctx context.Context, r any) (context.Context, SubscriptionTrace)

	// NewCallHandler (set by snodo) returns the Handle of a new handler
	// of the call messages (snodo.Call, ToolCall, ListenCall) an actor
	// receives, run on r, a
	// snodo.Requester, off the actor's mailbox: origin (a snodo.Origin)
	// goes on replies no client served, and listen (nil, or a
	// func(context.Context, snodo.Filter, ...snodo.ListenOption) error)
	// runs the ListenCall messages. Handle reports whether the message
	// was a call message.
	NewCallHandler func(r, origin, listen any) func(ctx protoactor.Context) bool

	// AnswerDeadCalls (set by snodo) makes sure a call message sent to
	// an actor of sys that is gone is still answered, with a -32000.
	AnswerDeadCalls func(sys *protoactor.ActorSystem)

	// WrappedCall (set by servers) is the call message a servers.To
	// carries and the server it names (true), for a dead letter's
	// answer; msg is any message.
	WrappedCall func(msg any) (call any, server string, ok bool)

	// TargetIsHTTP (set by snodo) reports whether t, a snodo.Target,
	// names a server that runs elsewhere (a Streamable HTTP endpoint, or
	// a Transport such as the HTTP+SSE one) rather than a command.
	TargetIsHTTP func(t any) bool

	// FlushNotifications (set by snodo) waits until every notification
	// queued for c's (a *snodo.Client's) WithNotificationHandler handler
	// has been delivered and the handler has returned, or ctx is done.
	// After c's Done is closed no more arrive, so it waits for all the
	// server sent: the CLI flushes before it exits, to print them all.
	FlushNotifications func(ctx context.Context, c any) error

	// Kill (set by snodo) closes c, a *snodo.Client, and stops its
	// server for good: SIGTERM then SIGKILL to its process group if it
	// has not exited 500 ms after its stdin closed; it returns once the
	// server is reaped. For a server the supervisor gives up on (a
	// replaced one, the members of a pool that could not start).
	Kill func(c any)

	// RemoteOptions (set by snodo) reads opts, a []snodo.Option given to
	// a remote client: what they set, or an error for the first option
	// that is nil, invalid, or sets anything a remote client does not
	// have (its server is started and reached by the hosts).
	RemoteOptions func(opts any) (RemoteSettings, error)

	// ConnectOptionsOf (set by supervisor) is the []snodo.Option that
	// opts, a []supervisor.Option, give every connection
	// (supervisor.WithConnectOptions), in order; an invalid option is an
	// error.
	ConnectOptionsOf func(opts any) (any, error)

	// SupervisorSetup (set by supervisor) is the actor system (nil: none
	// named), the owner actor (nil: none named) and the logger (one that
	// discards: none named) that opts, a []supervisor.Option, name;
	// invalid options are an error.
	SupervisorSetup func(opts any) (*protoactor.ActorSystem, *protoactor.PID, *slog.Logger, error)

	// PoolSize (set by supervisor) is the number of members in rotation
	// of p, a *supervisor.Pool, read without copying them (Members
	// copies): a host asks it of every call it takes.
	PoolSize func(p any) int
)
