package snodo

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"net/http"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/oauth"
	"github.com/snodo/snodo/internal/serverproc"
)

// Option configures Connect. Options validate their input: Connect
// returns the first option error.
type Option func(*config) error

// config is everything Connect needs; the caller never sees it.
type config struct {
	conn           engine.Config
	mcp            mcpConfig
	tracerProvider trace.TracerProvider // nil: the global one
	meterProvider  metric.MeterProvider // nil: the global one
	oauth          *oauth.Config        // WithOAuth; nil: no authorization
	lent           *connopts.Lent       // connopts.Lend; nil: none asked
	lendEach       func(connopts.Lent)  // connopts.LendEach; nil: none asked

	// The first option given that only one transport has, by name: a
	// connect over the other transport refuses it (checkTransport).
	processOnly, httpOnly string
}

// processOption and httpOption record that the option named name was
// given, which only a started process (stdio) or only HTTP has.
func (c *config) processOption(name string) { c.processOnly = cmp.Or(c.processOnly, name) }
func (c *config) httpOption(name string)    { c.httpOnly = cmp.Or(c.httpOnly, name) }

// applyOptions applies opts in order for fn (Connect, ConnectHTTP),
// refusing a nil option, an invalid one, and one of the other
// transport's: no option is silently ignored.
// applyOptions applies opts for fn, whose transport is kind: the options
// of another transport are refused.
func applyOptions(fn string, opts []Option, kind transportKind) (*config, error) {
	cfg := &config{}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("snodo: %s: option %d is nil; leave it out of the list instead", fn, i+1)
		}
		if err := opt(cfg); err != nil {
			return nil, fmt.Errorf("snodo: %w", err)
		}
	}
	switch {
	case kind != kindStdio && cfg.processOnly != "":
		return nil, fmt.Errorf("snodo: %s: %s applies to a server snodo starts as a command; this server runs elsewhere: leave it out", fn, cfg.processOnly)
	case kind != kindHTTP && cfg.httpOnly != "":
		return nil, fmt.Errorf("snodo: %s: %s applies to a Streamable HTTP server (ConnectHTTP); leave it out", fn, cfg.httpOnly)
	}
	if err := checkDir(cfg.conn.Dir); err != nil {
		return nil, fmt.Errorf("snodo: %w", err)
	}
	return cfg, nil
}

// config is what internal/connopts reads of a list of options.
var (
	_ connopts.Config                           = (*config)(nil)
	_ connopts.RemoteConfig[ClientCapabilities] = (*config)(nil)
)

// Shared is what the options applied to c give the layers above a
// connection (a supervisor, a pool): each is given once and reaches
// every layer (internal/connopts).
func (c *config) Shared() connopts.Shared {
	return connopts.Shared{
		Logger: c.conn.Logger, Meter: c.meterProvider, System: c.conn.System, Owner: c.conn.Owner,
		OriginServer: c.mcp.origin.Server, OriginMember: c.mcp.origin.Member,
		Timeout: c.conn.Timeout, ShutdownGrace: c.conn.ShutdownGrace, Era: c.mcp.era != "",
	}
}

// Unown takes back the owner an earlier WithOwner gave (connopts.Unowned).
func (c *config) Unown() { c.conn.Owner = nil }

// Lend has a successful connect fill in l (connopts.Lend).
func (c *config) Lend(l *connopts.Lent) { c.lent = l }

// LendEach is connopts.LendEach's.
func (c *config) LendEach(f func(connopts.Lent)) { c.lendEach = f }

// ProcessGrace sets the shutdown grace of a server started as a command
// without making it a process-only option (connopts.ProcessGrace): the
// connection of another transport never reads it.
func (c *config) ProcessGrace(d time.Duration) { c.conn.ShutdownGrace = d }

// WithEnv sets an environment variable for the server, on top of the
// inherited environment.
func WithEnv(name, value string) Option {
	return func(c *config) error {
		c.processOption("WithEnv")
		if err := serverproc.CheckEnvName(name); err != nil {
			return fmt.Errorf("WithEnv: %w", err)
		}
		if strings.ContainsRune(value, 0) {
			return fmt.Errorf("WithEnv: the value of %s contains a NUL byte", name)
		}
		c.conn.Env = append(c.conn.Env, engine.EnvVar{Name: name, Value: value})
		return nil
	}
}

// WithoutEnv removes an inherited environment variable from the server's
// environment.
func WithoutEnv(name string) Option {
	return func(c *config) error {
		c.processOption("WithoutEnv")
		if err := serverproc.CheckEnvName(name); err != nil {
			return fmt.Errorf("WithoutEnv: %w", err)
		}
		c.conn.Env = append(c.conn.Env, engine.EnvVar{Name: name, Unset: true})
		return nil
	}
}

// WithCleanEnv starts the server with only the named variables of this
// process's environment (plus those given with WithEnv) instead of all of
// it, so secrets in the environment do not reach third-party servers.
// With no names, a small default allow-list is used: PATH, HOME, USER,
// LOGNAME, SHELL, LANG, LC_ALL, TERM, TMPDIR, TZ. A name that no
// variable can have (empty, or with '=' or a NUL byte) is an error.
func WithCleanEnv(allow ...string) Option {
	return func(c *config) error {
		c.processOption("WithCleanEnv")
		if len(allow) == 0 {
			allow = defaultCleanEnv
		}
		for _, name := range allow {
			if err := serverproc.CheckEnvName(name); err != nil {
				return fmt.Errorf("WithCleanEnv: %w", err)
			}
		}
		c.conn.CleanEnv = true
		c.conn.AllowEnv = append([]string(nil), allow...)
		return nil
	}
}

// defaultCleanEnv is the allow-list WithCleanEnv uses when given no names.
var defaultCleanEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"}

// WithDir sets the server's working directory. Default: the caller's.
// A later WithDir replaces an earlier one. The last one's dir is checked
// once every option is applied: one that does not exist or is no
// directory fails Connect, naming it, before anything starts (a dir a
// later WithDir replaced is never checked).
func WithDir(dir string) Option {
	return func(c *config) error {
		c.processOption("WithDir")
		c.conn.Dir = dir
		return nil
	}
}

// checkDir fails for a working directory (WithDir) that does not exist
// or is no directory.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("WithDir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("WithDir: %s is not a directory", dir)
	}
	return nil
}

// WithMaxLineBytes sets the largest line accepted from the server, in
// bytes of its content: its ending, "\n" or "\r\n", does not count. The
// rest of a longer line is discarded as it arrives, so the request it
// answered times out; later lines are unaffected. Default 16 MiB; n goes
// from 64 to 1 GiB, others are refused (a
// line is held whole in memory: a larger cap would bound nothing). It
// also bounds the read buffer: a line that outgrows 1 MiB is read into a
// buffer of 16 MiB (or n, if smaller) at once, so while such a line
// arrives a connection may hold that much.
func WithMaxLineBytes(n int) Option {
	return func(c *config) error {
		if err := limits.CheckMaxLineBytes(n); err != nil {
			return fmt.Errorf("WithMaxLineBytes: %w", err)
		}
		c.conn.MaxLineBytes = n
		return nil
	}
}

// WithMaxWriteQueue bounds, in bytes, what waits to be written to a
// server that reads more slowly than it is written to. A request or
// notification past the bound fails at once with a local -32603 wrapping
// snodo.ErrWriteQueueFull and is not sent; the connection lives on. Answers to
// the server's own requests may use as much again; past that the server
// is taken to have stopped reading and the connection closes with
// snodo.ErrNotReading. A request that times out or is cancelled while still
// queued is dropped, never sent. Default 16 MiB.
func WithMaxWriteQueue(bytes int) Option {
	return func(c *config) error {
		if bytes < 1 {
			return fmt.Errorf("WithMaxWriteQueue: %d bytes must be at least 1", bytes)
		}
		c.conn.MaxWriteQueue = bytes
		return nil
	}
}

// WithServerRequestHandler answers requests the server sends to the
// client (legacy era) and the input requests of multi-round-trip results
// (modern era), on one path: each runs in its own child actor of the
// connection, under the WithMaxServerRequests bound. In the modern era
// the request's ID is its key in the result's inputRequests, as a JSON
// string, and its ctx is cancelled when the call's ctx is done, its
// timeout expires or the connection stops. Without a handler, every
// server request is answered with -32601.
func WithServerRequestHandler(h ServerRequestHandler) Option {
	return func(c *config) error { c.mcp.handler = h; return nil }
}

// WithMaxServerRequests bounds the handlers running at once, in both
// eras. A legacy server request over the bound is answered with -32603
// without running the handler; a modern input request over the bound
// waits for a slot, in arrival order (at most 4096 wait; the call's ctx,
// its timeout and Close end the wait). Default 16.
func WithMaxServerRequests(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("WithMaxServerRequests: %d must be at least 1", n)
		}
		c.conn.MaxServerRequests = n
		return nil
	}
}

// WithTimeout sets the default per-request timeout. Default 60 s; a
// negative value disables it. The Timeout request option overrides it.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d == 0 {
			return errors.New("WithTimeout: zero timeout; pass a negative duration to disable timeouts")
		}
		c.conn.Timeout = d
		return nil
	}
}

// WithStderr sends the server's stderr to w. Default: inherited (the
// server writes to this process's stderr), not captured. When w is not an
// *os.File, snodo reads stderr itself: the last lines appear in the error
// callers see when the server exits (with control characters shown as
// \x1b and the like, and invalid UTF-8 as U+FFFD; w gets the bytes as
// they were written), and a w that blocks never stalls the
// server or the connection (output it cannot take is dropped; one
// goroutine stays parked in a Write that never returns until it does).
func WithStderr(w io.Writer) Option {
	return func(c *config) error {
		c.processOption("WithStderr")
		c.conn.Stderr = w
		return nil
	}
}

// WithLogger receives the anomalies snodo sees on the wire (malformed
// lines, unknown IDs, overlong lines) and lifecycle events. Default:
// discarded.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error { c.conn.Logger = l; return nil }
}

// WithOwner makes an actor the owner of the connection: the connection
// watches it and closes when it terminates (in addition to Connect's ctx).
func WithOwner(pid *protoactor.PID) Option {
	return func(c *config) error {
		if pid == nil {
			return errors.New("WithOwner: nil PID")
		}
		c.conn.Owner = pid
		return nil
	}
}

// WithActorSystem runs the connection actor on sys. Default: one shared
// system with its logging discarded.
func WithActorSystem(sys *protoactor.ActorSystem) Option {
	return func(c *config) error {
		if sys == nil {
			return errors.New("WithActorSystem: nil system")
		}
		c.conn.System = sys
		return nil
	}
}

// WithShutdownGrace turns on forced shutdown, beyond what the MCP stdio
// transport asks (close stdin and let the server exit): a server that has
// not exited d after its stdin was closed gets SIGTERM, and SIGKILL d
// later, sent to its whole process group so that servers started through
// wrappers such as npx leave nothing behind. d 0 turns it off: only stdin
// is closed. A plain Connect has it off by default: snodo never signals a
// server it does not own unless asked (this option) — except one whose
// Connect failed, which nobody else could stop (see
// docs/errors.md). Supervised clients and pools own their servers and
// turn it on by default (2 s); give
// WithShutdownGrace(0) in supervisor.WithConnectOptions to keep them
// stdin-only.
func WithShutdownGrace(d time.Duration) Option {
	return func(c *config) error {
		if d > 0 {
			c.processOption("WithShutdownGrace")
		}
		if d < 0 {
			return fmt.Errorf("WithShutdownGrace: %s must not be negative (0 turns forced shutdown off)", d)
		}
		c.conn.ShutdownGrace = d
		return nil
	}
}

// WithClientInfo sets the name and version the client reports to the
// server (initialize's clientInfo, or _meta clientInfo on every modern
// request). Default: "snodo" and its version.
func WithClientInfo(name, version string) Option {
	return func(c *config) error {
		if name == "" || version == "" {
			return errors.New("WithClientInfo: name and version must not be empty")
		}
		c.mcp.clientInfo = Implementation{Name: name, Version: version}
		return nil
	}
}

// WithClientCapabilities declares what the client can do (roots,
// sampling, elicitation, extensions), sent as the client capabilities
// object in initialize and in every modern request's _meta. Declare only
// what the WithServerRequestHandler handler answers. Default: nothing.
func WithClientCapabilities(caps ClientCapabilities) Option {
	return func(c *config) error { c.mcp.capabilities = caps; return nil }
}

// WithProbeTimeout bounds the wait for an answer to the server/discover
// probe Connect sends first; a server silent for that long is treated as
// legacy and spoken to with initialize. Default 10 s.
func WithProbeTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithProbeTimeout: %s must be positive", d)
		}
		c.mcp.probeTimeout = d
		return nil
	}
}

// WithMaxInputRounds bounds the input_required rounds CallTool,
// ReadResource and GetPrompt complete for one call before giving up with
// ErrTooManyInputRounds. Default 10.
func WithMaxInputRounds(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("WithMaxInputRounds: %d must be at least 1", n)
		}
		c.mcp.maxInputRounds = n
		return nil
	}
}

// WithEra skips era detection. EraLegacy starts with initialize and never
// sends the server/discover probe (for servers known to be legacy, or
// that misbehave on an unknown first request); EraModern probes but fails
// instead of falling back to initialize. Default: detect (probe, then
// fall back).
func WithEra(e Era) Option {
	return func(c *config) error {
		if e != EraModern && e != EraLegacy {
			return fmt.Errorf("WithEra: unknown era %q (use EraModern or EraLegacy)", e)
		}
		c.mcp.era = e
		return nil
	}
}

// WithWireTrace calls fn with every JSON-RPC line exchanged with the
// server, without its newline: lines sent in the order they go on the
// wire, lines received before they are acted on. fn may be called from
// several goroutines at once (a sent and a received line), so it must be
// safe for concurrent use; it must not block, nor call the Client, which
// would deadlock. line is only valid during the call: copy it to keep it.
// A panic in fn is recovered and logged (WithLogger), and the line goes
// on as if untraced. Without this option, tracing costs nothing.
//
// For example, to log the wire to stderr:
//
//	var mu sync.Mutex
//	snodo.WithWireTrace(func(dir connection.Direction, line []byte) {
//		mu.Lock()
//		defer mu.Unlock()
//		fmt.Fprintf(os.Stderr, "%s %s\n", dir, line)
//	})
func WithWireTrace(fn func(dir connection.Direction, line []byte)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("WithWireTrace: nil function")
		}
		c.conn.Trace = fn
		return nil
	}
}

// WithHTTPClient makes every HTTP request of ConnectHTTP with client: its
// Transport (proxy, TLS, a RoundTripper that adds authorization),
// redirect policy and cookie jar. snodo's own redirect rule runs first
// (a redirect to another origin drops credentials, the session and the
// user's headers; see docs/http.md), then the client's CheckRedirect, on
// a copy: the client itself is not changed. Every request body can be replayed
// (GetBody is set), so a RoundTripper may retry. Leave client.Timeout
// zero: SSE streams last as long as their request, and each request has
// its own timeout (WithTimeout). Default: a client of the connection's
// own (a clone of http.DefaultTransport keeping up to 100 idle
// connections to the endpoint, so that many calls in flight reuse
// theirs), whose idle connections Close closes; a client given here is left as it is.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) error {
		c.httpOption("WithHTTPClient")
		if client == nil {
			return errors.New("WithHTTPClient: nil *http.Client; leave the option out for the default")
		}
		c.conn.HTTPClient = client
		return nil
	}
}

// WithHTTPHeader adds a header to every HTTP request of ConnectHTTP (an
// API key, say). The headers the transport sets itself (Content-Type,
// Accept, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Mcp-Param-*) win over one given here. A value is never logged, and
// never sent to another origin (scheme, host and port) a request is
// redirected to.
func WithHTTPHeader(name, value string) Option {
	return func(c *config) error {
		c.httpOption("WithHTTPHeader")
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return fmt.Errorf("WithHTTPHeader: %q is not a header name", name)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return fmt.Errorf("WithHTTPHeader: the value of %s contains a line break or NUL", name)
		}
		if c.conn.Header == nil {
			c.conn.Header = http.Header{}
		}
		c.conn.Header.Add(name, value)
		return nil
	}
}
