package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/sandbox"
	"github.com/snodo/snodo/internal/serverproc"
	"github.com/snodo/snodo/internal/telemetry"
)

const (
	defaultMaxWriteQueue = 16 << 20        // bytes of callers' lines waiting to be written
	closeFlushTimeout    = 2 * time.Second // how long Close may spend flushing queued lines
)

// EnvVar changes one variable of the server's environment: set to Value,
// or removed from the inherited environment when Unset is true.
type EnvVar struct {
	Name  string
	Value string
	Unset bool
}

// Config describes one connection. The zero value of each field means its
// documented default. Config is copied by Start; the caller's value is
// never changed.
type Config struct {
	Command string   // the server program, looked up in PATH; no shell
	Args    []string // its arguments
	Env     []EnvVar // changes to the inherited environment, applied in order
	// CleanEnv starts the server with only the variables named in
	// AllowEnv (plus Env) instead of the whole environment.
	CleanEnv bool
	AllowEnv []string
	Dir      string // working directory; default: the caller's

	// Transport, set instead of Command and URL, is the way to the
	// server: a Transport of the caller's (InMemory, or one of its own).
	// Each Start opens it anew.
	Transport connection.Transport

	// URL, set instead of Command, connects to a Streamable HTTP MCP
	// endpoint (http:// or https://) rather than starting a process; the
	// process fields above (and Stderr, ShutdownGrace) are then unused.
	// Each message is its own POST; answers come as JSON or SSE.
	URL string
	// SSE says URL is the SSE stream of a server of the HTTP+SSE
	// transport of protocol version 2024-11-05 (see SSE), not a
	// Streamable HTTP endpoint. HTTPClient, Header and WrapTransport
	// apply to it alike.
	SSE bool
	// HTTPClient makes every HTTP request of a URL connection (its
	// Transport for proxies, TLS, authorization). Default: a client of
	// the connection's own, whose idle connections are closed when the
	// connection ends; a caller's client is left as it is.
	HTTPClient *http.Client
	// Header is added to every HTTP request of a URL connection.
	Header http.Header
	// WrapTransport, when set, wraps the RoundTripper every HTTP request
	// of a URL connection goes through (HTTPClient's, or the default),
	// as authorization does: it sees every request, whose body it can
	// replay (GetBody is set). An error fails Start.
	WrapTransport func(base http.RoundTripper) (http.RoundTripper, error)

	// MaxLineBytes is the largest line accepted from the server, in bytes
	// of its content: its ending ("\n" or "\r\n") does not count. The
	// rest of a longer line is discarded as it arrives (logged at Warn);
	// the request it answered times out. Default 16 MiB; from 64 to
	// 1 GiB (a line is held whole in memory, so a larger cap bounds
	// nothing).
	MaxLineBytes int
	Timeout      time.Duration // per-request; default 60 s; negative: no timeout
	Stderr       io.Writer     // default: inherited (os.Stderr), not captured
	Logger       *slog.Logger  // anomalies from the server; default: discard

	System *protoactor.ActorSystem // default: snodo's shared quiet system
	Owner  *protoactor.PID         // an actor owner, watched
	// OwnerContext, when done, closes the connection. Start's ctx is used
	// when nil.
	OwnerContext context.Context

	// Handler answers server-to-client requests, each in its own child
	// actor; nil answers every server request with -32601.
	Handler handlers.Func
	// MaxServerRequests bounds the handlers running at once: a server
	// request over the bound is answered with -32603 without running the
	// handler; a modern input request over it waits for a slot.
	// Default 16.
	MaxServerRequests int

	// OnMessage, if set, sees each message the connection actor does not
	// handle itself (the root package answers its call messages there)
	// and reports whether it took it. It runs on the connection actor and
	// must not block: start the work elsewhere and return.
	OnMessage func(ctx protoactor.Context) bool

	// OnNotification, if set, sees every server notification not routed
	// to a request (progress), a stream (subscription) or a handler
	// (cancelled), in the order they arrive. ctx is done once the
	// connection stops; params is the caller's to keep. It runs on the
	// reader goroutine and must not block: queue the notification and
	// return. A panic in it is recovered and logged (at Error, with the
	// method, the panic and the stack); that notification is lost and
	// the reader goes on with the next line.
	OnNotification func(ctx context.Context, method string, params json.RawMessage)

	// Trace, if set, sees every complete line on the wire, without its
	// newline: each line sent, in the order the lines go to the server's
	// stdin, at the moment it is handed to the writer (so before it
	// reaches the pipe, and also when the write later fails); and each
	// line received, before it is routed (lines over MaxLineBytes are
	// discarded unseen). It is called from the caller's goroutine (sent)
	// and the reader goroutine (received), possibly at the same time, so
	// it must be safe for concurrent use. It must not block, and must not
	// call the connection: sent lines are traced under the writer's lock.
	// The slice is only valid during the call; copy it to keep it. A
	// panic in it is recovered and logged (at Error), and the line goes
	// on as if untraced. Nil (default): no tracing, at no cost.
	Trace func(dir connection.Direction, line []byte)

	// OnStop, when set, runs once on the connection actor as the
	// connection stops, with the reason.
	OnStop func(reason error)

	// moduleConfig holds what only snodo's own packages set (the
	// connection's instruments), out of this package's documentation.
	moduleConfig

	// MaxWriteQueue bounds, in bytes, the lines waiting to be written to
	// a server that reads more slowly than it is written to (default
	// 16 MiB). A request or notification that would go past
	// it fails at once with a local error wrapping snodo.ErrWriteQueueFull and
	// is not sent (a line is always taken into an empty queue, however
	// long). The connection's own lines (answers to server requests,
	// refusals, cancellations) may use as much again; past twice the bound
	// the server is taken to have stopped reading its stdin and the
	// connection stops with snodo.ErrNotReading; the callers' lines count for at
	// most the bound there, so a caller's long line alone never makes the
	// connection stop. A line whose caller gave up (timeout, cancelled
	// ctx) before it was written is dropped from the queue and never sent
	// (nor cancelled); one whose writing had begun is written whole, and a
	// request's notifications/cancelled follows it.
	MaxWriteQueue int

	// ShutdownGrace, when positive, signals a server that has not exited
	// this long after its stdin was closed: SIGTERM to its process group,
	// then SIGKILL after another grace period. Zero (default): never.
	ShutdownGrace time.Duration
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if _, err := transportOf(&cfg); err != nil {
		return cfg, err
	}
	if cfg.MaxLineBytes == 0 {
		cfg.MaxLineBytes = limits.MaxLineBytes
	}
	if err := limits.CheckMaxLineBytes(cfg.MaxLineBytes); err != nil {
		return cfg, fmt.Errorf("snodo: Config.MaxLineBytes: %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = limits.Timeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxServerRequests == 0 {
		cfg.MaxServerRequests = limits.MaxServerRequests
	}
	if cfg.MaxWriteQueue == 0 {
		cfg.MaxWriteQueue = defaultMaxWriteQueue
	}
	if cfg.MaxWriteQueue < 0 {
		return cfg, fmt.Errorf("snodo: max write queue must be positive, got %d bytes", cfg.MaxWriteQueue)
	}
	if cfg.MaxServerRequests < 0 {
		return cfg, fmt.Errorf("snodo: max server requests must be positive, got %d", cfg.MaxServerRequests)
	}
	for _, e := range cfg.Env {
		if err := serverproc.CheckEnvName(e.Name); err != nil {
			return cfg, fmt.Errorf("snodo: %w", err)
		}
	}
	cfg.Args = append([]string(nil), cfg.Args...)
	cfg.Env = append([]EnvVar(nil), cfg.Env...)
	cfg.Sandbox = cfg.Sandbox.Clone()
	return cfg, nil
}

// moduleConfig is embedded in Config: its fields are set by the root
// package (cfg.Metrics = …, cfg.Sandbox = …) and, their types being
// internal, by no one else. See docs/architecture.md, "Packages and their
// direction".
type moduleConfig struct {
	telemetry.ConnConfig
	// Sandbox, when set, starts the server inside these limits
	// (sandbox.Start in place of exec.Cmd.Start); a stop it causes wraps
	// a *sandbox.Error. Nil: no sandbox.
	Sandbox *sandbox.Spec
	// Lend, when set, is filled in by Start with what the connection
	// lends the module's other packages (connseam.Lent). Nil: none.
	Lend *connseam.Lent
}
