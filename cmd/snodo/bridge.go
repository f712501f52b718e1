package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/remote"
)

// `snodo bridge --nats URL --server NAME` is a stdio MCP server that
// forwards its client's requests to a name served over NATS, so that any
// MCP host can use a served name as a plain command of its mcpServers
// file.
//
//	MCP host ──stdio──▶ gateway.Handler.ServeStdio ──remote.Client──▶ NATS ──▶ a host of NAME ──▶ MCP server
//
// It is the gateway of `snodo serve --nats` with a stdio framing instead
// of Streamable HTTP: the same engine serves the client, in both eras
// (a legacy client on a legacy-era twin, as serve's legacy clients),
// with the same fidelity (progress before each result, setLevel and
// resources/subscribe served, server requests relayed to the client and
// its answer returned, list changes announced again after an outage).
// Its one legacy session keeps its calls and subscriptions on one server
// (a host of the name, a member of its legacy-era pool) while that server
// lives; when it is gone the session moves to a live one, since a stdio
// client cannot initialize again (gateway.md, "Over stdio").

// runBridge runs the bridge until its stdin ends or a signal comes.
func runBridge(cfg *config, sio stdio) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client that goes away must not kill the bridge with SIGPIPE before
	// it cancelled what it forwarded: writes fail with EPIPE instead, which
	// ends the run (exit status 141).
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	log := slog.New(slog.NewTextHandler(sio.err, &slog.HandlerOptions{Level: bridgeLogLevel(cfg)}))
	h, err := gateway.New(gateway.WithLogger(log))
	if err != nil {
		fmt.Fprintf(sio.err, "snodo bridge: %v\n", err)
		return exitFailure
	}
	defer h.Close()
	dial := func(ctx context.Context, conn []snodo.Option) (*remote.Client, error) {
		opts := []remote.ClientOption{
			remote.WithNATSOptions(natsOptions(cfg)...),
			remote.WithConnectOptions(append(conn, snodo.WithTimeout(cfg.timeout), snodo.WithLogger(log))...),
		}
		if cfg.prefix != "" {
			opts = append(opts, remote.WithPrefix(cfg.prefix))
		}
		return remote.Dial(ctx, cfg.natsURL, cfg.serverName, opts...)
	}
	dialed := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintln(sio.err, "snodo bridge: interrupted while connecting to NATS")
			return exitInterrupted
		}
		return (&session{cfg: cfg, io: sio}).exitCode(ctx, err) // says what to check, as the other commands do
	}
	c, err := dial(ctx, h.ConnectOptions()) // natsleg: remote clients take them whole
	if err != nil {
		return dialed(err)
	}
	defer c.Close()
	if err := h.Attach(c); err != nil {
		fmt.Fprintf(sio.err, "snodo bridge: %v\n", err)
		return exitFailure
	}
	// The legacy-era twin, as `snodo serve --nats` has: a legacy client's
	// session goes to a remote client of the legacy era, whose calls and
	// subscriptions the hosts serve on their legacy-era connection of the
	// name (remote.ServeLegacy), relaying that server's requests and logs
	// to it, so that the client's own handlers answer them. It is dialled
	// when the client initializes; a dial that fails answers that
	// initialize with an error saying why. Closed after the handler, which
	// ends a dial under way first.
	var twin twinClient
	defer twin.close()
	defer h.Close()
	if err := h.AttachLegacy(func(hctx context.Context) (snodo.Session, error) {
		l, err := dial(hctx, append(h.ConnectOptions(), snodo.WithEra(snodo.EraLegacy)))
		if err != nil {
			log.Warn("snodo bridge: the legacy-era connection did not start", "server", cfg.serverName, "error", err)
			return nil, err
		}
		twin.set(l)
		return l, nil
	}); err != nil {
		fmt.Fprintf(sio.err, "snodo bridge: %v\n", err)
		return exitFailure
	}
	log.Info("snodo bridge: serving a served name on stdio", "server", cfg.serverName)
	out := &watchedWriter{w: sio.out}
	err = h.ServeStdio(ctx, sio.in, out)
	switch {
	case out.failed():
		return exitBrokenPipe
	case ctx.Err() != nil:
		return exitOK // a signal: what was in flight was cancelled
	case err != nil:
		fmt.Fprintf(sio.err, "snodo bridge: %v\n", err)
		return exitFailure
	}
	return exitOK
}

func bridgeLogLevel(cfg *config) slog.Level {
	if cfg.verbose {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// twinClient is the bridge's legacy-era remote client, once dialled.
type twinClient struct {
	mu sync.Mutex
	c  *remote.Client
}

func (t *twinClient) set(c *remote.Client) {
	t.mu.Lock()
	t.c = c
	t.mu.Unlock()
}

// close closes the client, if one was dialled.
func (t *twinClient) close() {
	t.mu.Lock()
	c := t.c
	t.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// watchedWriter remembers that a write to the client failed: its reader
// went away.
type watchedWriter struct {
	w    io.Writer
	mu   sync.Mutex
	fail bool
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.mu.Lock()
		w.fail = true
		w.mu.Unlock()
	}
	return n, err
}

func (w *watchedWriter) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fail
}
