package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/mcpmethod"
	"github.com/snodo/snodo/internal/natsname"
	"github.com/snodo/snodo/supervisor"
)

// HostOption configures a Host (NewHost): Serve, WithMaxHeld,
// WithHostLabel, WithLogger, and every Option.
type HostOption interface{ applyHost(*config) error }

// ClientOption configures a Client (NewClient, Dial): WithHeartbeat,
// WithConnectOptions (the snodo options that apply to a remote client),
// and every Option.
type ClientOption interface{ applyClient(*config) error }

// Option configures a Host and a Client alike (WithPrefix,
// WithNATSOptions, WithReconnect): it is both a HostOption and a
// ClientOption. An option meant for one kind only is not an Option, so
// it cannot be given to the other: that is a compile error, not an
// option silently ignored.
type Option func(*config) error

func (o Option) applyHost(c *config) error   { return o(c) }
func (o Option) applyClient(c *config) error { return o(c) }

// hostOption is an option for hosts only.
type hostOption func(*config) error

func (o hostOption) applyHost(c *config) error { return o(c) }

// clientOption is an option for clients only.
type clientOption func(*config) error

func (o clientOption) applyClient(c *config) error { return o(c) }

type config struct {
	prefix    string
	natsOpt   []nats.Option
	reconnect *Reconnect // WithReconnect's; nil: defaultReconnect unless natsOpt says otherwise
	logger    *slog.Logger

	// hosts
	pools   map[string]*supervisor.Pool
	order   []string
	given   []*supervisor.Pool // every pool passed to Serve, valid or not: closed if NewHost fails
	maxHeld int
	label   string
	legacy  map[string]legacyStart // ServeLegacy's, by name

	// callers
	beat      time.Duration
	timeout   time.Duration
	handler   snodo.ServerRequestHandler
	maxRounds int
	meta      map[string]json.RawMessage                                       // snodo.WithClientCapabilities: merged into every request's _meta
	system    *protoactor.ActorSystem                                          // ListenTo actors; nil: snodo's shared system
	tracers   trace.TracerProvider                                             // nil: the global provider
	meters    metric.MeterProvider                                             // nil: the global provider
	era       snodo.Era                                                        // snodo.WithEra: EraLegacy asks for the names' legacy-era connections
	notify    func(ctx context.Context, method string, params json.RawMessage) // snodo.WithNotificationHandler: a legacy call's log messages
}

func hostConfig(opts []HostOption) (config, error) {
	return newConfig(opts, HostOption.applyHost)
}

func clientConfig(opts []ClientOption) (config, error) {
	return newConfig(opts, ClientOption.applyClient)
}

func newConfig[O comparable](opts []O, apply func(O, *config) error) (config, error) {
	c := config{
		prefix: defaultPrefix, maxHeld: defaultMaxHeld,
		beat: defaultHeartbeat, timeout: defaultTimeout, maxRounds: limits.MaxInputRounds,
	}
	var first, zero = error(nil), *new(O)
	for i, o := range opts { // all of them: every pool given to Serve is owned, even after an error
		var err error
		if o == zero {
			err = fmt.Errorf("remote: option %d is nil; leave it out of the list instead", i+1)
		} else {
			err = apply(o, &c)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c, first
}

// defaultTimeout is a remote call's timeout when neither
// snodo.WithTimeout (in WithConnectOptions) nor the snodo.Timeout request
// option gives one, as for a local connection.
const defaultTimeout = limits.Timeout

// WithPrefix sets the first subject token (default "snodo"): letters,
// digits, '-' and '_' only. Hosts
// and callers of one deployment must agree on it. Both.
func WithPrefix(prefix string) Option {
	return func(c *config) error {
		if err := natsname.Check("prefix", prefix); err != nil {
			return err
		}
		c.prefix = prefix
		return nil
	}
}

// WithNATSOptions passes options (credentials, TLS, reconnect policy…)
// to the NATS connections the package opens: both of a Host's, and
// Dial's. Both.
func WithNATSOptions(opts ...nats.Option) Option {
	return func(c *config) error { c.natsOpt = append(c.natsOpt, opts...); return nil }
}

// WithReconnect sets how the NATS connections the package opens come
// back after their server goes away (default: for ever, pausing
// 100 ms, then twice as long each time, up to 5 s). It wins over the
// reconnect options of WithNATSOptions. Both.
func WithReconnect(r Reconnect) Option {
	return func(c *config) error {
		if r.Attempts < 0 || r.Wait < 0 || r.MaxWait < 0 {
			return fmt.Errorf("remote: WithReconnect(%+v): negative values; Attempts 0 tries for ever", r)
		}
		c.reconnect = &r
		return nil
	}
}

// natsOptions are the options of a connection the package opens: the
// default reconnect policy, then WithNATSOptions', then WithReconnect's,
// then extra.
func (c *config) natsOptions(extra ...nats.Option) []nats.Option {
	opts := append([]nats.Option{defaultReconnect.option()}, c.natsOpt...)
	if c.reconnect != nil {
		opts = append(opts, c.reconnect.option())
	}
	return append(opts, extra...)
}

// WithLogger receives the host's lifecycle events (its NATS connections
// lost and back, names withdrawn and advertised again) and anomalies
// (default: discarded). Hosts; a client takes snodo.WithLogger in
// WithConnectOptions.
func WithLogger(l *slog.Logger) HostOption {
	return hostOption(func(c *config) error {
		if l == nil {
			return errors.New("remote: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	})
}

// WithHeartbeat sets how often the host running a call or subscription
// tells the caller it is alive, and how often a subscriber tells the
// host it still listens (default 500 ms). A call's host that sends
// nothing for 2 to 3.5 beats (adapted to how regular its beats were) is
// asked for through NATS, and its calls fail with -32000 (ErrHostGone)
// once NATS holds no connection of it; a host still connected but late
// keeps them for up to 20 beats (at least 10 s); the same holds for a
// subscription's host. Callers.
func WithHeartbeat(d time.Duration) ClientOption {
	return clientOption(func(c *config) error {
		if d < 20*time.Millisecond || d > time.Minute {
			return fmt.Errorf("remote: WithHeartbeat(%s): use 20ms to 1m", d)
		}
		c.beat = d
		return nil
	})
}

// WithConnectOptions configures the client with the options of
// snodo.Connect that apply to it, as they configure a local client, and
// as supervisor.WithConnectOptions passes them to a supervised one:
//
//   - snodo.WithTimeout: the default per-call timeout (default 60 s;
//     negative: none). The snodo.Timeout request option overrides it.
//     The host is told the sooner of the timeout and the ctx's deadline;
//     a call with neither still meets the host's own: its pool's
//     per-request timeout, which ends it with a -32001 from the host.
//   - snodo.WithServerRequestHandler: answers the input requests of
//     input_required results (elicitation, sampling, roots) on the
//     caller's side, before the call is sent again, to whichever host
//     takes it. Requests a legacy server sends during a call are
//     answered by the host's own handler (its pool's), unless the client
//     is of the legacy era (WithEra below) and the host serves the name's
//     legacy-era connection: then this handler answers them.
//   - snodo.WithMaxInputRounds: bounds the input_required rounds one
//     typed call completes (default 10).
//   - snodo.WithClientCapabilities: what the handler answers. It travels
//     in every request's params._meta
//     ("io.modelcontextprotocol/clientCapabilities"), where it wins over
//     the host's own, so a modern server asks this caller only for input
//     it can give; the tasks extension is declared too (the typed calls
//     run tasks, through the host that holds each). Legacy servers settle
//     capabilities once, with the host, at initialize.
//   - snodo.WithTracerProvider: one CLIENT span per request, and per
//     subscription with a SERVER span per event, made by the same code as
//     a local client's, with network.transport "tcp"; the trace context
//     crosses to the host in NATS headers, so the host's spans are its
//     children. Default: the global provider, followed as it changes.
//     Hosts trace with their pools' own providers.
//   - snodo.WithMeterProvider: mcp.client.operation.duration
//     (network.transport "tcp"), requests in flight, and the
//     subscriptions' queue depth and overflows (snodo.server.name: the
//     served name), as a local client records them. Default: the global
//     provider.
//   - snodo.WithActorSystem: the system of the actors given to
//     snodo.ListenTo on the client's subscriptions (default: the shared
//     system snodo uses when none is given).
//   - snodo.WithLogger: lifecycle events (its NATS connection lost and
//     back) and anomalies (default: discarded).
//   - snodo.WithEra(snodo.EraLegacy): the client is a caller of the
//     legacy era. Its calls go to the legacy-era connection of each host
//     that has one (ServeLegacy; the host's pool otherwise), and the
//     requests that server sends during a call (sampling, elicitation,
//     roots) come to this client's WithServerRequestHandler, whose answer
//     goes back to the server; its subscriptions (Listen) are served by
//     the same connection, so that what it subscribes to is where its
//     calls go. logging/setLevel is kept by the client:
//     each call then carries the level, and the log messages its server
//     sends during it come to WithNotificationHandler. Info (and Era)
//     then describe the hosts' legacy-era connection: EraLegacy, or
//     their pool's era when they have none. WithEra(snodo.EraModern) is
//     the default.
//   - snodo.WithNotificationHandler: the log messages
//     (notifications/message) of a legacy-era caller's calls, at or
//     above its logging/setLevel level, before the call's result.
//
// Any other (WithEnv, WithDir, WithStderr, WithClientInfo, …) configures
// how a server is started or reached, which the hosts do: NewClient and
// Dial refuse it, naming its place in the list. Options given here add to
// each other; a later one wins. Callers.
func WithConnectOptions(opts ...snodo.Option) ClientOption {
	return clientOption(func(c *config) error {
		s, err := connopts.RemoteOf[snodo.ClientCapabilities](opts)
		if err != nil {
			return fmt.Errorf("remote: WithConnectOptions: %w", err)
		}
		if s.Timeout != 0 {
			c.timeout = s.Timeout
		}
		if s.Handler != nil {
			c.handler = s.Handler
		}
		if s.MaxInputRounds != 0 {
			c.maxRounds = s.MaxInputRounds
		}
		if s.Capabilities != nil {
			if c.meta, err = capabilitiesMeta(*s.Capabilities); err != nil {
				return err
			}
		}
		if s.Tracers != nil {
			c.tracers = s.Tracers
		}
		if s.Meters != nil {
			c.meters = s.Meters
		}
		if s.System != nil {
			c.system = s.System
		}
		if s.Logger != nil {
			c.logger = s.Logger
		}
		if s.Era != "" {
			c.era = snodo.Era(s.Era)
		}
		if s.Notify != nil {
			c.notify = s.Notify
		}
		return nil
	})
}

// capabilitiesMeta is the _meta member that declares caps, with the
// tasks extension, on every request.
func capabilitiesMeta(caps snodo.ClientCapabilities) (map[string]json.RawMessage, error) {
	caps.Extensions = maps.Clone(caps.Extensions)
	if caps.Extensions == nil {
		caps.Extensions = map[string]json.RawMessage{}
	}
	if _, ok := caps.Extensions[mcpmethod.TasksExtension]; !ok {
		caps.Extensions[mcpmethod.TasksExtension] = json.RawMessage("{}")
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return nil, fmt.Errorf("remote: WithConnectOptions: snodo.WithClientCapabilities: %w", err)
	}
	return map[string]json.RawMessage{"io.modelcontextprotocol/clientCapabilities": b}, nil
}
