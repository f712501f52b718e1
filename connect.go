package snodo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/origins"
	"github.com/snodo/snodo/internal/ownercheck"
	tgt "github.com/snodo/snodo/internal/target"
	"github.com/snodo/snodo/internal/telemetry"
)

// Connect starts command with args (no shell) and connects to it over
// stdio. ctx is the connection's owner: when it is done, the connection
// closes. Connect returns once the MCP era is settled; a command that
// cannot be started is an error at once.
//
// A Connect that fails after the server started (its ctx ends, or the
// server does not answer the probe in time) leaves nothing running: it
// closes the server's stdin, waits a 500 ms grace for it to exit, then
// sends SIGTERM to its process group (the server and the helpers it
// started) and, after another 500 ms, SIGKILL, and returns once the
// server is reaped. So a failed Connect returns up to about 1 s after its
// ctx ends: at once for a server that exits at EOF, about 0.5 s for one
// that ignores EOF but exits on SIGTERM, about 1 s for one that ignores
// both.
func Connect(ctx context.Context, command string, args []string, opts ...Option) (*Client, error) {
	if ctx == nil {
		return nil, errors.New("snodo: Connect: nil context.Context; pass context.Background() or a ctx that bounds the connect (it also owns the connection)")
	}
	cfg, err := applyOptions("Connect", opts, kindStdio)
	if err != nil {
		return nil, err
	}
	cfg.conn.Command, cfg.conn.Args = command, args
	c := &Client{}
	c.Calls = newCalls(c, c.inputHandling)
	if err := c.start(ctx, cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// ConnectHTTP connects to the MCP server at a Streamable HTTP endpoint
// (an http:// or https:// URL) and returns the same *Client Connect
// returns: every call, Listen, notifications, input rounds, progress,
// cancellation, telemetry and call messages work as they do over stdio.
// ctx is the connection's owner, as for Connect. The era is settled as
// over stdio: a server/discover probe (modern, stateless POSTs), else
// initialize (legacy: a session with Mcp-Session-Id, the optional GET
// stream, resumable streams). docs/http.md says what goes on the wire.
// A server of the older HTTP+SSE transport (2024-11-05) is reached too:
// when the POST of initialize is answered 400, 404 or 405, the URL is
// taken for its SSE stream (a GET whose first event names where to
// POST), as the specification's backwards-compatibility rules say;
// connection.SSE goes there directly.
//
// The options of a started process (WithEnv, WithoutEnv, WithCleanEnv,
// WithDir, WithStderr, a positive WithShutdownGrace) are refused with an
// error, as Connect refuses HTTP's own (WithHTTPClient, WithHTTPHeader,
// WithOAuth). Close
// ends a legacy session with a DELETE. A server that ends the session
// (404) or cannot be reached stops the client, with
// snodo.ErrSessionExpired or snodo.ErrServerUnreachable as its
// Err: a supervised client then connects
// again, opening a new session.
func ConnectHTTP(ctx context.Context, url string, opts ...Option) (*Client, error) {
	if ctx == nil {
		return nil, errors.New("snodo: ConnectHTTP: nil context.Context; pass context.Background() or a ctx that bounds the connect (it also owns the connection)")
	}
	cfg, err := applyOptions("ConnectHTTP", opts, kindHTTP)
	if err != nil {
		return nil, err
	}
	if url == "" {
		return nil, errors.New("snodo: ConnectHTTP: empty URL; pass the MCP endpoint, such as https://example.com/mcp")
	}
	cfg.conn.URL = url
	if cfg.oauth != nil {
		cfg.conn.WrapTransport = func(base http.RoundTripper) (http.RoundTripper, error) { return cfg.authorized(url, base) }
	}
	c := &Client{}
	c.Calls = newCalls(c, c.inputHandling)
	if err := c.start(ctx, cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Transport carries a connection's JSON-RPC messages to a server and
// back: stdio (Connect) and Streamable HTTP (ConnectHTTP) are its
// implementations inside snodo, connection.InMemory runs a server in
// this process, and a user's own (a unix socket, a websocket) plugs in
// the same way, through ConnectTransport or TransportTarget. Everything
// above it (eras, typed calls, input rounds, subscriptions, progress,
// cancellation, telemetry, call messages) is the same whatever the
// transport. See connection.Transport for the contract.
type Transport = connection.Transport

// ConnectTransport connects to the server that t reaches and returns the
// same *Client Connect returns. ctx is the connection's owner, as for
// Connect; the era is settled as over any transport (a server/discover
// probe, else initialize). The options of a started process (WithEnv,
// WithDir, WithStderr, …) and of Streamable HTTP (WithHTTPClient,
// WithHTTPHeader, WithOAuth) are refused: t owns the way to its server.
func ConnectTransport(ctx context.Context, t Transport, opts ...Option) (*Client, error) {
	if ctx == nil {
		return nil, errors.New("snodo: ConnectTransport: nil context.Context; pass context.Background() or a ctx that bounds the connect (it also owns the connection)")
	}
	if t == nil {
		return nil, errors.New("snodo: ConnectTransport: nil Transport; pass connection.InMemory(…) or a Transport of your own")
	}
	cfg, err := applyOptions("ConnectTransport", opts, kindOther)
	if err != nil {
		return nil, err
	}
	cfg.conn.Transport = t
	c := &Client{}
	c.Calls = newCalls(c, c.inputHandling)
	if err := c.start(ctx, cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// transportKind is which transport a connect is for, for the options it
// takes.
type transportKind int

const (
	kindStdio transportKind = iota
	kindHTTP
	kindOther // a Transport value: ConnectTransport
)

// start starts the server and settles the era: the server/discover probe,
// then the legacy fallback (restarting a server the probe killed, once).
func (c *Client) start(ctx context.Context, cfg *config) error {
	if cfg.mcp.clientInfo.Name == "" {
		cfg.mcp.clientInfo = Implementation{Name: defaultClientName, Version: defaultClientVersion}
	}
	c.mcp.origin = cfg.mcp.origin
	c.mcp.serve = serverRequests(cfg.mcp.handler)
	c.mcp.maxRounds = cmp.Or(cfg.mcp.maxInputRounds, limits.MaxInputRounds)
	c.mcp.timeout = cfg.conn.Timeout
	cfg.conn.Handler = c.mcp.serve
	if cfg.mcp.handler != nil {
		cfg.conn.ObserveHandler = c.observeHandler
	}
	c.tel = telemetry.New(cfg.tracerProvider, cfg.meterProvider)
	transport := telemetry.TransportPipe
	switch {
	case cfg.conn.URL != "":
		transport = telemetry.TransportTCP
		c.meters = c.tel.ForEndpoint(transport, cfg.name())
	case cfg.conn.Transport != nil:
		transport = telemetry.TransportOther
		c.meters = c.tel.ForEndpoint(transport, cfg.name())
	default:
		c.meters = c.tel.ForConn(cfg.conn.Command)
	}
	cfg.conn.Metrics = c.meters
	c.site = site{tel: c.tel, meters: c.meters, transport: transport, version: c.version}
	if cfg.conn.Logger != nil {
		cfg.conn.Logger = slog.New(eraHandler{Handler: cfg.conn.Logger.Handler(), era: &c.era})
	}
	c.notes = newNotifier(&cfg.mcp, cfg.conn.Logger)
	c.notes.origin = cfg.mcp.origin
	c.notes.meters = c.meters
	c.notes.observe = c.notificationReceived
	cfg.conn.OnNotification = c.onNotification // tasks' status, then c.notes.push
	c.calls = &callHandler{Calls: c.Calls, Origin: cfg.mcp.origin, Listen: func(ctx context.Context, f Filter, opts ...ListenOption) error {
		_, err := c.Listen(ctx, f, opts...)
		return err
	}}
	cfg.conn.OnMessage = c.calls.Handle
	if err := checkOwner(&cfg.conn); err != nil {
		return err
	}
	conn, err := c.startConn(ctx, cfg)
	if err != nil {
		return err // already says which command could not start, and why
	}
	c.conn = conn
	answerDeadCalls(conn.System())
	origins.Name(conn.System(), c.PID(), cfg.mcp.origin) // its Origin on replies once it stopped
	err = c.negotiate(ctx, cfg)
	if err == nil {
		era, version := string(c.mcp.era), c.mcp.version
		c.era.Store(&era)
		c.sessionVersion.Store(&version)
	}
	if err != nil {
		// Nobody can stop a server Connect did not return: close its
		// stdin, give it a moment to exit at EOF, then stop its process
		// group (it and its helpers).
		c.kill()
		return err
	}
	c.notes.modern.Store(c.mcp.era == EraModern)
	c.connected.Store(true)
	if cfg.lent != nil || cfg.lendEach != nil {
		l := connopts.Lent{Kill: c.kill, Flush: c.notes.flush, Done: c.Done()}
		if cfg.lent != nil {
			*cfg.lent = l
		}
		if cfg.lendEach != nil {
			cfg.lendEach(l)
		}
	}
	return nil
}

// name is the server as messages name it: the command, or the URL
// without credentials or query (as Target.String shows it).
func (c *config) name() string {
	switch {
	case c.conn.URL != "":
		return HTTP(c.conn.URL).String()
	case c.conn.Transport != nil:
		return TransportTarget(c.conn.Transport).String()
	}
	return c.conn.Command
}

// checkOwner refuses, before anything starts, a WithOwner actor that the
// connection's actor system does not know (internal/ownercheck).
func checkOwner(cfg *engine.Config) error {
	sys := cfg.System
	if sys == nil {
		sys = snodoactor.Shared()
	}
	if err := ownercheck.Check(sys, cfg.Owner, "connection"); err != nil {
		return fmt.Errorf("snodo: %w", err)
	}
	return nil
}

// startConn starts a connection (the first, or a restart) with its
// session clock.
func (c *Client) startConn(ctx context.Context, cfg *config) (*engine.Conn, error) {
	ended, owner := c.sessionEnded(time.Now()), cfg.conn.Owner
	cfg.conn.OnStop = func(reason error) {
		ended(reason)
		if owner != nil && c.connected.Load() { // a Connect that failed reports on its own
			c.conn.System().Root.Send(owner, &Closed{Client: c, Err: reason, Origin: c.mcp.origin})
		}
	}
	var lent connseam.Lent
	cfg.conn.Lend = &lent
	conn, err := engine.Start(ctx, cfg.conn)
	if err == nil {
		c.lent = lent // what c.conn lends: written before Connect returns, read-only after
	}
	return conn, err
}

// failedConnectGrace is how long a failed Connect (a restart, Kill) lets
// the server it gave up on exit at EOF before SIGTERM to its process group,
// and then before SIGKILL.
const failedConnectGrace = 500 * time.Millisecond

// ConnectTo is Connect for actors: it returns at once and sends the
// outcome to pid as a *Connected message, so an actor can connect from its
// Receive without blocking its mailbox for the era negotiation. The
// connection is owned by pid (WithOwner) and runs on system unless opts
// say otherwise. If pid has stopped by the time the connection is ready,
// the connection closes by itself (its owner is gone).
//
// Mistakes that leave nobody to tell — a nil ctx, system or pid — are
// returned at once and nothing is started; every other outcome, errors
// included, arrives as the message.
func ConnectTo(ctx context.Context, system *protoactor.ActorSystem, pid *protoactor.PID, command string, args []string, opts ...Option) error {
	switch {
	case ctx == nil:
		return errors.New("snodo: ConnectTo: nil context.Context; pass context.Background() or a ctx that bounds the connect")
	case system == nil:
		return errors.New("snodo: ConnectTo: nil actor system; pass the system pid lives in (ctx.ActorSystem() in Receive)")
	case pid == nil:
		return errors.New("snodo: ConnectTo: nil PID; pass the actor that receives *Connected (ctx.Self() in Receive)")
	}
	opts = append([]Option{WithActorSystem(system), WithOwner(pid)}, opts...)
	go func() {
		c, err := Connect(ctx, command, args, opts...)
		system.Root.Send(pid, &Connected{Client: c, Err: err})
	}()
	return nil
}

// Target is how to reach a server, for whatever connects to one more
// than once (a supervisor restarting it, a pool's members): a command to
// start (Command) or a Streamable HTTP endpoint (HTTP). The zero Target
// names nothing and cannot be connected. A Target is a value: copy it
// freely.
type Target tgt.Target

// Command is the Target of a server started as name with args (no
// shell), reached over its stdio, as Connect does.
func Command(name string, args ...string) Target {
	return Target(tgt.Command(name, args))
}

// HTTP is the Target of a server reached at a Streamable HTTP endpoint
// url, as ConnectHTTP does.
func HTTP(url string) Target {
	return Target(tgt.URL(url))
}

// TransportTarget is the Target of a server reached through t, as
// ConnectTransport does; t is opened anew for each connection.
func TransportTarget(t Transport) Target {
	return Target(tgt.Transport(t))
}

// String names the target in logs, events and metrics: the command name
// (not its arguments, which may carry secrets), the URL with any
// password and query left out, or a transport's own name (its String
// method's, else its type's).
func (t Target) String() string {
	tt := tgt.Target(t)
	if tr := tt.Transport(); tr != nil {
		if s, ok := tr.(fmt.Stringer); ok {
			return s.String()
		}
		return fmt.Sprintf("%T", tr)
	}
	if tt.URL() == "" {
		command, _ := tt.Command()
		return command
	}
	u, err := url.Parse(tt.URL())
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.Redacted()
}

// Connect connects to the target once, as Connect or ConnectHTTP would,
// with opts.
func (t Target) Connect(ctx context.Context, opts ...Option) (*Client, error) {
	tt := tgt.Target(t)
	command, args := tt.Command()
	switch {
	case tt.Transport() != nil:
		return ConnectTransport(ctx, tt.Transport(), opts...)
	case tt.URL() != "":
		return connectHTTPTarget(ctx, tt.URL(), opts)
	case command != "":
		return Connect(ctx, command, args, opts...)
	}
	return nil, errors.New("snodo: empty Target: make one with snodo.Command(name, args...), snodo.HTTP(url) or snodo.TransportTarget(t)")
}

// connectHTTPTarget is the one place an HTTP Target is connected: each
// connect opens a new session.
func connectHTTPTarget(ctx context.Context, url string, opts []Option) (*Client, error) {
	return ConnectHTTP(ctx, url, opts...)
}
