package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/remote/embedded"
	"github.com/snodo/snodo/servers"
	"github.com/snodo/snodo/supervisor"
)

// runNode is `snodo node`: it serves every server of --config over NATS
// until SIGINT or SIGTERM, then drains (a second signal stops it at
// once). Without --nats it starts an embedded NATS server and prints its
// URL first, on stdout.
func runNode(cfg *config, sio stdio) int {
	fail := func(err error) int {
		fmt.Fprintf(sio.err, "snodo node: %v\n", err)
		return exitFailure
	}
	file, err := loadFile(cfg.configFile, sio.err)
	if err != nil {
		return fail(err)
	}
	if len(file.Servers) == 0 {
		return fail(fmt.Errorf("%s: no server to serve", cfg.configFile))
	}
	names := file.Names()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	url := cfg.natsURL
	if url == "" {
		emb, err := embedded.Start(embedded.Options{})
		if err != nil {
			return fail(err)
		}
		defer emb.Shutdown()
		url = emb.URL()
		fmt.Fprintln(sio.out, url)
	}
	logger := slog.New(slog.DiscardHandler)
	if cfg.verbose {
		logger = slog.New(slog.NewTextHandler(sio.err, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts := []remote.Option{remote.WithLogger(logger), remote.WithNATSOptions(natsOptions(cfg)...)}
	if cfg.prefix != "" {
		opts = append(opts, remote.WithPrefix(cfg.prefix))
	}
	var pools []*supervisor.Pool
	for _, srv := range file.Servers {
		p, err := startPool(srv, cfg, sio)
		if err != nil {
			for _, p := range pools {
				_ = p.Close()
			}
			return fail(fmt.Errorf("starting %s: %w", srv.Name, err))
		}
		pools = append(pools, p)
		opts = append(opts, remote.Serve(srv.Name, p))
	}
	h, err := remote.NewHost(context.Background(), url, opts...) // closes the pools if it fails
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(sio.out, "serving %s\n", strings.Join(names, " "))
	fmt.Fprintf(sio.err, "snodo node: serving %s on %s (host %s)\n", strings.Join(names, ", "), url, h.ID())

	<-ctx.Done()
	stop()
	// A second signal cuts the drain short.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	dctx, cancel := context.WithTimeout(context.Background(), cfg.drain)
	defer cancel()
	go func() {
		select {
		case <-again:
			cancel()
		case <-dctx.Done():
		}
	}()
	fmt.Fprintln(sio.err, "snodo node: draining (a second signal stops at once)")
	if err := h.Shutdown(dctx); err != nil {
		fmt.Fprintf(sio.err, "snodo node: %v\n", err)
		return exitInterrupted
	}
	fmt.Fprintln(sio.err, "snodo node: drained")
	return exitOK
}

// startPool starts the pool of one configured server (its "pool" size,
// default 1). Requests a legacy server sends during a call are answered
// here, on the host, as the CLI answers them (--root, --sampling-reply;
// elicitation is declined: a node has no terminal to ask on).
func startPool(srv *servers.Server, cfg *config, sio stdio) (*supervisor.Pool, error) {
	sio.inTTY = false
	h := &answers{roots: cfg.roots, samplingReply: cfg.samplingReply, io: sio}
	conn := []snodo.Option{snodo.WithServerRequestHandler(h.serve), snodo.WithClientCapabilities(h.capabilities())}
	if srv.ShutdownGrace == 0 {
		conn = append(conn, snodo.WithShutdownGrace(shutdownGrace)) // a node leaves no server behind
	}
	return srv.NewPool(context.Background(), supervisor.WithConnectOptions(conn...))
}

// natsOptions are the NATS connection options of the command line:
// credentials and TLS for an external NATS system.
func natsOptions(cfg *config) []nats.Option {
	opts := []nats.Option{nats.Timeout(10 * time.Second)}
	if cfg.natsCreds != "" {
		opts = append(opts, nats.UserCredentials(cfg.natsCreds))
	}
	if cfg.natsNkey != "" {
		if o, err := nats.NkeyOptionFromSeed(cfg.natsNkey); err == nil {
			opts = append(opts, o)
		} else {
			opts = append(opts, func(*nats.Options) error { return fmt.Errorf("--nats-nkey: %w", err) })
		}
	}
	if cfg.natsUser != "" {
		opts = append(opts, nats.UserInfo(cfg.natsUser, os.Getenv("SNODO_NATS_PASSWORD")))
	}
	if tok := os.Getenv("SNODO_NATS_TOKEN"); tok != "" {
		opts = append(opts, nats.Token(tok))
	}
	if cfg.natsCA != "" {
		opts = append(opts, nats.RootCAs(cfg.natsCA))
	}
	if cfg.natsCert != "" || cfg.natsKey != "" {
		opts = append(opts, nats.ClientCert(cfg.natsCert, cfg.natsKey))
	}
	return opts
}
