package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/internal/supopts"
	"github.com/snodo/snodo/internal/target"
	"github.com/snodo/snodo/servers"
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
	var command string
	var args []string
	var target snodo.Target
	stopAuth := func() {}
	// A protected server: authorize on its first 401, the user's browser
	// coming back to a loopback port; the probe waits for the user unless
	// --probe-timeout says otherwise.
	authorize := func(file snodo.OAuth, probeSet bool) error {
		auth, stop, err := httpAuth(file, s.io.err)
		if err != nil {
			return err
		}
		stopAuth = stop
		opts = append(opts, auth)
		if s.cfg.probeTimeout == 0 && !probeSet {
			opts = append(opts, snodo.WithProbeTimeout(authorizeTimeout))
		}
		return nil
	}
	if s.cfg.url != "" {
		if len(s.cfg.env) > 0 || len(s.cfg.unset) > 0 || s.cfg.dir != "" {
			return nil, usagef("--env, --unset and --dir set up a server snodo starts; the --url server runs elsewhere: leave them out")
		}
		target = snodo.HTTP(s.cfg.url)
		for _, kv := range s.cfg.headers {
			k, v, _ := strings.Cut(kv, "=")
			opts = append(opts, snodo.WithHTTPHeader(k, v))
		}
		opts = append(opts, s.probeTimeout(0)...)
		opts = append(opts, s.eraOption()...)
		if err := authorize(snodo.OAuth{}, false); err != nil {
			return nil, err
		}
	} else if s.cfg.serverName != "" {
		spec, err := s.named()
		if err != nil {
			return nil, err
		}
		if spec.era && s.cfg.era == "" && s.cfg.probeTimeout > 0 {
			return nil, usagef("--probe-timeout: server %q of %s sets its \"era\", so snodo sends it no server/discover probe; leave the flag out", spec.Name, s.cfg.configFile)
		}
		target = spec.Target
		s.fileTimeout = spec.timeout
		s.sandbox = spec.Sandbox
		opts = s.withFile(opts, spec)
		if spec.http && !spec.SSE { // the HTTP+SSE transport takes no OAuth
			var o snodo.OAuth
			if spec.OAuth != nil {
				o = *spec.OAuth
			}
			if err := authorize(o, spec.timeout > 0); err != nil { // the file's timeout bounds the probe
				return nil, err
			}
		}
	} else {
		command, args = s.cfg.server[0], s.cfg.server[1:]
		target = snodo.Command(command, args...)
		opts = append(opts, s.probeTimeout(0)...)
		opts = append(opts, snodo.WithShutdownGrace(shutdownGrace))
		opts = append(opts, s.processOptions()...)
	}
	// The connection's own work (the handshake) belongs to the run's
	// trace, without taking Ctrl-C from ctx.
	owner, cancelOwner := context.WithCancel(trace.ContextWithSpan(context.Background(), trace.SpanFromContext(ctx)))
	stopWatch := context.AfterFunc(ctx, cancelOwner)
	c, err := target.Connect(owner, opts...)
	if err == nil {
		go func() { <-c.Done(); stopAuth() }() // the loopback listener lasts as long as the connection
	} else {
		stopAuth()
	}
	if !stopWatch() || err != nil {
		cancelOwner()
		if err == nil {
			s.close(c)
			return nil, ctx.Err()
		}
		return nil, err
	}
	s.askForLogs(ctx, c)
	return c, nil
}

// named is the --server NAME of the --config file.
func (s *session) named() (*fileServer, error) {
	file, err := loadFile(s.cfg.configFile, s.io.err)
	if err != nil {
		return nil, err
	}
	spec, err := file.Lookup(s.cfg.serverName)
	if errors.Is(err, servers.ErrUnknownServer) {
		return nil, &usageError{"--server: " + err.Error()} // its message lists the names the file has
	}
	if err != nil {
		return nil, err // a skipped server: the error says why
	}
	return readServer(spec)
}

// fileServer is a server of the --config file as the command line runs
// it: one plain connection, not a supervised one, made with the connect
// options of its configuration; and what the command line reads back of
// that configuration for its own waits and messages. Nothing here is
// read from the file a second time: it is all in spec's Options.
type fileServer struct {
	*servers.Server
	connect []snodo.Option // its Options' supervisor.WithConnectOptions
	timeout time.Duration  // its snodo.WithTimeout (the file's "timeout"); 0: none given
	grace   time.Duration  // its snodo.WithShutdownGrace ("shutdownGrace"); 0: none given
	era     bool           // it has a snodo.WithEra ("era"): it gets no probe
	http    bool           // its Target is a Streamable HTTP endpoint
}

// readServer reads spec's configuration.
func readServer(spec *servers.Server) (*fileServer, error) {
	opts, err := supopts.ConnectOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	set, err := connopts.SharedOf(opts)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	return &fileServer{Server: spec, connect: opts, timeout: set.Timeout, grace: set.ShutdownGrace,
		era: set.Era, http: !target.Target(spec.Target).IsCommand()}, nil
}

// withFile adds the file's options for spec after the flags' (so the
// file's env, dir, timeout and era win over the defaults), then the flags
// a user gave explicitly (--timeout, --env, --unset, --dir, --era), which
// win over the file. --dir replaces the file's "cwd" without it being
// checked (only the last snodo.WithDir is).
func (s *session) withFile(opts []snodo.Option, spec *fileServer) []snodo.Option {
	if !spec.http {
		opts = append(opts, snodo.WithShutdownGrace(shutdownGrace)) // before the file's own
	}
	opts = append(opts, spec.connect...)
	opts = append(opts, s.probeTimeout(spec.timeout)...)
	if s.cfg.timeoutSet {
		opts = append(opts, snodo.WithTimeout(s.cfg.timeout))
	}
	if !spec.http { // the flags' --env, --unset (the file's env may set it) and --dir, for a command server
		opts = append(opts, s.processOptions()...)
	}
	return append(opts, s.eraOption()...)
}

// eraOption is --era's option, if it was given.
func (s *session) eraOption() []snodo.Option {
	switch s.cfg.era {
	case "modern":
		return []snodo.Option{snodo.WithEra(snodo.EraModern)}
	case "legacy":
		return []snodo.Option{snodo.WithEra(snodo.EraLegacy)}
	}
	return nil
}

// probeTimeout is the bound of the server/discover probe: --probe-timeout
// when given; otherwise the run's request timeout (--timeout, or the
// file's "timeout" for a server of the --config file, fileTimeout) when
// it is shorter than the library's 10 s, so that no wait of the run is
// longer than the timeout the user set, the probe's neither. A user who
// wants a server slow to start and quick requests gives both flags.
func (s *session) probeTimeout(fileTimeout time.Duration) []snodo.Option {
	if s.cfg.probeTimeout > 0 {
		return []snodo.Option{snodo.WithProbeTimeout(s.cfg.probeTimeout)}
	}
	timeout := s.cfg.timeout
	if !s.cfg.timeoutSet && fileTimeout != 0 {
		timeout = fileTimeout
	}
	if timeout > 0 && timeout < limits.ProbeTimeout {
		return []snodo.Option{snodo.WithProbeTimeout(timeout)}
	}
	return nil
}

// askForLogs asks a server that offers logging for its log messages (info
// and above; debug with --verbose), which the notification handler prints
// on stderr. --quiet asks for none.
func (s *session) askForLogs(ctx context.Context, c *snodo.Client) {
	if s.cfg.quiet || c.Capabilities().Logging == nil {
		return
	}
	level := snodo.LoggingLevel("info")
	if s.cfg.verbose {
		level = "debug"
	}
	if err := c.SetLoggingLevel(ctx, level); err != nil && s.cfg.verbose {
		fmt.Fprintf(s.io.err, "snodo: the server refused logging/setLevel: %s\n", oneLine(trim(err)))
	}
}

// processOptions are the flags' options that only a server started as a
// command has (--env, --unset, --dir); the common ones come from
// options, and the shutdown grace goes first, before a file's. A
// Streamable HTTP server is refused them, so they go to command servers
// only.
func (s *session) processOptions() []snodo.Option {
	var opts []snodo.Option
	for _, kv := range s.cfg.env {
		k, v, _ := strings.Cut(kv, "=")
		opts = append(opts, snodo.WithEnv(k, v))
	}
	for _, k := range s.cfg.unset {
		opts = append(opts, snodo.WithoutEnv(k))
	}
	if s.cfg.dir != "" {
		opts = append(opts, snodo.WithDir(s.cfg.dir))
	}
	return opts
}

// options turns the flags into Connect options: those every server
// takes (processOptions has a command server's own).
func (s *session) options() ([]snodo.Option, error) {
	cfg := s.cfg
	h := &answers{roots: cfg.roots, samplingReply: cfg.samplingReply, io: s.io, verbose: cfg.verbose}
	opts := []snodo.Option{
		snodo.WithTimeout(cfg.timeout),
		snodo.WithMaxLineBytes(cfg.maxLineBytes),
		snodo.WithServerRequestHandler(h.serve),
		snodo.WithClientCapabilities(h.capabilities()),
		snodo.WithClientInfo("snodo-cli", version),
		snodo.WithMaxInputRounds(cfg.maxInputRounds),
		snodo.WithNotificationHandler(newNotes(s.io.err, cfg.quiet, cfg.verbose).handle),
		connopts.Lend[snodo.Option](&s.lent), // its Flush, for flushNotes
	}
	opts = append(opts, s.eraOption()...)
	if cfg.dir != "" {
		why := "not a directory"
		fi, err := os.Stat(cfg.dir)
		var pe *fs.PathError
		if errors.As(err, &pe) {
			why = pe.Err.Error() // the path is named already
		}
		if err != nil || !fi.IsDir() {
			return nil, &usageError{fmt.Sprintf("--dir %s: %s", cfg.dir, why)}
		}
	}
	if s.spans != nil {
		opts = append(opts, snodo.WithTracerProvider(s.spans.tp))
	}
	if cfg.verbose {
		log := slog.New(slog.NewTextHandler(s.io.err, &slog.HandlerOptions{Level: slog.LevelDebug}))
		opts = append(opts, snodo.WithLogger(log), snodo.WithWireTrace(newWireLog(s.io.err).trace))
	}
	return opts, nil
}

// maxLogged bounds how much of one line --verbose copies to stderr.
const maxLogged = 2000

// wireLog is --verbose's wire trace: each line on the wire goes to w as
// "snodo → LINE" (sent) or "snodo ← LINE" (received), cut to maxLogged
// bytes. It writes synchronously, like the logger beside it: a stderr
// that stops taking output stalls the connection.
type wireLog struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newWireLog(w io.Writer) *wireLog { return &wireLog{w: w} }

// hasControl reports whether line holds a byte visible would rewrite:
// a C0 control or DEL, or a UTF-8 lead byte of a C1 code (0xC2), or a
// byte of invalid UTF-8. Most lines hold none and are copied as they are.
func hasControl(line []byte) bool {
	for _, c := range line {
		if c < 0x20 || c == 0x7f || c == 0xc2 {
			return true
		}
	}
	return !utf8.Valid(line)
}

func (l *wireLog) trace(dir connection.Direction, line []byte) {
	arrow := "snodo ← "
	if dir == connection.Sent {
		arrow = "snodo → "
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf[:0], arrow...)
	if line = line[:min(len(line), maxLogged)]; hasControl(line) {
		l.buf = append(l.buf, safetext.Visible(string(line))...) // JSON strings may hold C1 codes raw
	} else {
		l.buf = append(l.buf, line...)
	}
	l.buf = append(l.buf, '\n')
	_, _ = l.w.Write(l.buf) // one write per line: lines never interleave
}
