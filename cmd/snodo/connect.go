package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/snodo/snodo"
)

// connect starts the server and settles the era. Ctrl-C while it runs
// stops the server; once connected, the connection outlives ctx so that
// a cancelled request's notifications/cancelled still reaches the server
// before session.close closes its stdin.
func (s *session) connect(ctx context.Context) (*snodo.Client, error) {
	opts, err := s.options()
	if err != nil {
		return nil, err
	}
	command, args := s.cfg.server[0], s.cfg.server[1:]
	if s.cfg.verbose {
		// Relay the server through this binary, which copies the wire
		// to stderr (tee.go).
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--verbose: cannot find the snodo binary to relay the wire: %w", err)
		}
		command, args = self, append([]string{teeArg, "--", command}, args...)
	}
	owner, cancelOwner := context.WithCancel(context.Background())
	stopWatch := context.AfterFunc(ctx, cancelOwner)
	c, err := snodo.Connect(owner, command, args, opts...)
	if !stopWatch() || err != nil {
		cancelOwner()
		if err == nil {
			s.close(c)
			return nil, ctx.Err()
		}
		return nil, err
	}
	return c, nil
}

// options turns the flags into Connect options.
func (s *session) options() ([]snodo.Option, error) {
	cfg := s.cfg
	h := &answers{roots: cfg.roots, samplingReply: cfg.samplingReply, io: s.io, verbose: cfg.verbose}
	opts := []snodo.Option{
		snodo.WithTimeout(cfg.timeout),
		snodo.WithMaxLineBytes(cfg.maxLineBytes),
		snodo.WithServerRequestHandler(h.serve),
		snodo.WithClientCapabilities(h.capabilities()),
		snodo.WithClientInfo("snodo-cli", version),
		snodo.WithShutdownGrace(shutdownGrace),
	}
	for _, kv := range cfg.env {
		k, v, _ := strings.Cut(kv, "=")
		opts = append(opts, snodo.WithEnv(k, v))
	}
	for _, k := range cfg.unset {
		opts = append(opts, snodo.WithoutEnv(k))
	}
	if cfg.dir != "" {
		if fi, err := os.Stat(cfg.dir); err != nil || !fi.IsDir() {
			return nil, &usageError{fmt.Sprintf("--dir %s: not a directory", cfg.dir)}
		}
		opts = append(opts, snodo.WithDir(cfg.dir))
	}
	if cfg.verbose {
		log := slog.New(slog.NewTextHandler(s.io.err, &slog.HandlerOptions{Level: slog.LevelDebug}))
		opts = append(opts, snodo.WithLogger(log))
	}
	return opts, nil
}
