package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/internal/natsname"
	"github.com/snodo/snodo/internal/natsurl"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/servers"
	"github.com/snodo/snodo/supervisor"
)

// runNode is `snodo node`: it serves every server of --config over NATS
// until SIGINT or SIGTERM, then drains (a second signal stops it at
// once). Without --nats it starts an embedded NATS server and prints its
// URL first, on stdout, once every server serves. It exits only once
// every server it started has
// been reaped, so none outlives it.
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
	names := make([]string, len(file.Servers))
	for i, srv := range file.Servers { // before anything starts
		name := srv.Name
		names[i] = name
		if err := natsname.Check("server name", name); err != nil {
			return fail(&servers.FileError{File: file.Path, Server: name,
				Err: errors.New("cannot be served over NATS: use letters, digits, '-' and '_' only in the names of a served file")})
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	url := cfg.natsURL
	if url == "" {
		eo, err := embedAt(cfg.listenAddr)
		if err != nil {
			return fail(err)
		}
		emb, err := natsembed.Start(eo)
		if err != nil {
			return fail(err)
		}
		defer emb.Shutdown()
		url = emb.URL()
	}
	logger := slog.New(slog.DiscardHandler)
	if cfg.verbose {
		logger = slog.New(slog.NewTextHandler(sio.err, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts := []remote.HostOption{remote.WithLogger(logger), remote.WithNATSOptions(natsOptions(cfg)...), remote.WithMaxHeld(cfg.maxHeld)}
	if cfg.prefix != "" {
		opts = append(opts, remote.WithPrefix(cfg.prefix))
	}
	// The pools' owner: a signal while they start abandons the start
	// (their servers are stopped); once they serve, signals drain instead.
	poolCtx, closePools := context.WithCancel(context.Background())
	defer closePools()
	abandon := context.AfterFunc(ctx, closePools)
	var pools []*supervisor.Pool
	var wait time.Duration // how long reaping them may take
	reaped := func() {
		waitReaped(pools, wait, sio)
	}
	for _, srv := range file.Servers {
		p, err := startPool(poolCtx, srv, cfg, sio)
		if err != nil {
			for _, p := range pools {
				_ = p.Close()
			}
			reaped()
			if ctx.Err() != nil {
				fmt.Fprintln(sio.err, "snodo node: interrupted while starting the servers")
				return exitInterrupted
			}
			return fail(fmt.Errorf("starting %s: %w; a node serves all of its file's servers or none: fix server %q in %s, or mark it \"disabled\": true to serve the others",
				srv.Name, err, srv.Name, cfg.configFile))
		}
		pools = append(pools, p)
		wait = max(wait, reapWait(srv))
		opts = append(opts, remote.Serve(srv.Name, p), remote.ServeLegacy(srv.Name, legacyPool(srv))) // natsleg: legacy callers
	}
	if !abandon() { // the signal came as the last pool started
		for _, p := range pools {
			_ = p.Close()
		}
		reaped()
		fmt.Fprintln(sio.err, "snodo node: interrupted while starting the servers")
		return exitInterrupted
	}
	// The host's owner: a signal while it connects to NATS ends the
	// connecting (NewHost closes the pools); once it serves, signals
	// drain it instead (below), and the owner ends with runNode.
	hostCtx, endHost := context.WithCancel(context.Background())
	defer endHost()
	interrupt := context.AfterFunc(ctx, endHost)
	// NewHost closes the pools if it fails.
	h, err := remote.NewHost(hostCtx, url, opts...)
	if !interrupt() { // the signal came while it connected
		if err == nil {
			_ = h.Close() // it connected just then, and is stopping: its owner is done
		}
		reaped()
		fmt.Fprintln(sio.err, "snodo node: interrupted while connecting to NATS")
		return exitInterrupted
	}
	if err != nil {
		reaped()
		return fail(err)
	}
	defer reaped() // after Shutdown, which closes the pools
	defer func() { // natsleg: and the legacy-era pools the host started, which it owns
		select {
		case <-h.Done():
		case <-time.After(wait):
		}
	}()
	// Only now, when every server serves, is the URL worth calling: a
	// program that waits for the first line calls no name too soon.
	if cfg.natsURL == "" {
		fmt.Fprintln(sio.out, url)
	}
	fmt.Fprintf(sio.out, "serving %s\n", strings.Join(names, " "))
	fmt.Fprintf(sio.err, "snodo node: serving %s on %s (host %s)\n", strings.Join(names, ", "), natsurl.Redact(url), h.ID())

	select {
	case <-ctx.Done():
	case <-h.Done():
		// Its NATS connection closed for good (its reconnects were
		// refused, or spent): it stopped, and serves nothing any more.
		fmt.Fprintf(sio.err, "snodo node: %v\n", h.Err())
		return exitFailure
	}
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

// reapWait bounds how long a closed server of srv takes to be reaped:
// its shutdown grace (the file's, or the supervisor's default: a node
// leaves no server behind) to SIGTERM, as long again to SIGKILL, and a
// second.
func reapWait(srv *servers.Server) time.Duration {
	grace := 2 * time.Second // the supervisor's default grace
	if spec, err := readServer(srv); err == nil && spec.grace > 0 {
		grace = spec.grace // the file's (its pool started with it: its options are valid)
	}
	return 2*grace + time.Second
}

// waitReaped waits (at most wait) until every closed pool's servers have
// been reaped, and says so when some have not.
func waitReaped(pools []*supervisor.Pool, wait time.Duration, sio stdio) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, p := range pools {
		select {
		case <-p.Done():
		case <-timer.C:
			fmt.Fprintf(sio.err, "snodo node: some servers have not exited %v after their stdin closed; they may linger\n", wait)
			return
		}
	}
}

// startPool starts the pool of one configured server (its "pool" size,
// default 1). Requests a legacy server sends during a call are answered
// here, on the host, as the CLI answers them (--root, --sampling-reply;
// elicitation is declined: a node has no terminal to ask on).
func startPool(ctx context.Context, srv *servers.Server, cfg *config, sio stdio) (*supervisor.Pool, error) {
	sio.inTTY = false
	h := &answers{roots: cfg.roots, samplingReply: cfg.samplingReply, io: sio}
	conn := []snodo.Option{snodo.WithServerRequestHandler(h.serve), snodo.WithClientCapabilities(h.capabilities())}
	return supervisor.NewPool(ctx, srv.Target, srv.Pool, append(srv.Options, supervisor.WithConnectOptions(conn...))...)
}

// legacyPool starts, when the first legacy caller comes, the pool of srv
// connected in the legacy era: the host relays the requests and logs its
// server sends during a call to the call's caller (natsleg).
func legacyPool(srv *servers.Server) func(context.Context, ...snodo.Option) (*supervisor.Pool, error) {
	return func(ctx context.Context, conn ...snodo.Option) (*supervisor.Pool, error) {
		return supervisor.NewPool(ctx, srv.Target, srv.Pool, append(slices.Clone(srv.Options), supervisor.WithConnectOptions(conn...))...)
	}
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
