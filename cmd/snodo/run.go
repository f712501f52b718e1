package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/connopts"
)

// Exit statuses.
const (
	exitOK          = 0   // success
	exitFailure     = 1   // the server answered an error, or the connection failed
	exitUsage       = 2   // a mistake on the command line
	exitInterrupted = 130 // Ctrl-C (128 + SIGINT), after a clean shutdown
	exitBrokenPipe  = 141 // stdout's reader went away (128 + SIGPIPE), after a clean shutdown
)

// Bounds of a clean shutdown: a server still running shutdownGrace after
// its stdin closed gets SIGTERM, and SIGKILL as long again after that;
// snodo waits for it at most shutdownWait.
const (
	shutdownGrace = 2 * time.Second
	shutdownWait  = 2*shutdownGrace + time.Second
)

// stdio is the process's standard streams and what they are connected to.
type stdio struct {
	in            io.Reader
	out, err      io.Writer
	inTTY, errTTY bool
	outTTY        bool
	outFd, errFd  int
}

// systemIO describes os.Stdin, os.Stdout and os.Stderr.
func systemIO() stdio {
	return stdio{
		in: os.Stdin, out: os.Stdout, err: os.Stderr,
		inTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		outTTY: term.IsTerminal(int(os.Stdout.Fd())),
		errTTY: term.IsTerminal(int(os.Stderr.Fd())),
		outFd:  int(os.Stdout.Fd()), errFd: int(os.Stderr.Fd()),
	}
}

// width is the terminal width of fd, or 80 when it has none.
func width(fd int) int {
	if w, _, err := term.GetSize(fd); err == nil && w > 0 {
		return w
	}
	return 80
}

// run is the whole command: parse, connect, run the command, close.
// It returns the exit status.
func run(args []string, sio stdio) int {
	cfg, err := parseArgs(args, sio.err)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(sio.err, "snodo: %v\nRun 'snodo -h' for usage.\n", err)
		return exitUsage
	}
	switch cfg.command {
	case "version":
		fmt.Fprintln(sio.out, "snodo", version)
		return exitOK
	case "help":
		newFlagSet(&config{}, sio.out).Usage()
		return exitOK
	case "demo":
		return runDemo(sio)
	case "node":
		return runNode(cfg, sio)
	case "bridge":
		return runBridge(cfg, sio)
	case "serve":
		return runServe(cfg, sio)
	case "logout":
		if err := logout(context.Background(), cfg.url); err != nil {
			fmt.Fprintln(sio.err, "snodo: logout:", err)
			return exitFailure
		}
		return exitOK
	}
	if cfg.natsURL != "" && (cfg.serverName != "" || cfg.command == "servers") {
		return runRemote(cfg, sio)
	}
	if cfg.command == "servers" {
		return runServers(cfg, sio)
	}

	// The first Ctrl-C cancels ctx: the request in flight is cancelled on
	// the server and the connection closed. stop then restores the default
	// action, so a second Ctrl-C ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)

	// A reader of stdout that goes away (snodo … | head -c1) must not kill
	// snodo with SIGPIPE before it has closed the connection: writes to
	// stdout then fail with EPIPE instead, which ends the run.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	ctx, stdoutGone := context.WithCancel(ctx)
	defer stdoutGone()
	out := &pipeGuard{w: sio.out, gone: stdoutGone}
	sio.out = out

	s := &session{cfg: cfg, io: sio}
	ctx, printTrace := s.trace(ctx)
	defer printTrace()
	c, err := s.connect(ctx)
	if err != nil {
		return s.exitCode(ctx, err)
	}
	err = s.runCommand(ctx, c)
	if out.broken.Load() {
		s.close(c)
		return exitBrokenPipe
	}
	s.flushNotes(c) // the server's log lines before snodo's verdict
	code := s.exitCode(ctx, err)
	s.close(c)
	return code
}

// pipeGuard is stdout: once a write fails with EPIPE (its reader went
// away), it says so and ends the run, so that snodo closes the connection
// and exits quietly with exitBrokenPipe.
type pipeGuard struct {
	w      io.Writer
	gone   context.CancelFunc
	broken atomic.Bool
}

func (g *pipeGuard) Write(p []byte) (int, error) {
	n, err := g.w.Write(p)
	if err != nil && errors.Is(err, syscall.EPIPE) && g.broken.CompareAndSwap(false, true) {
		g.gone()
	}
	return n, err
}

// session is one run of a command against a server.
type session struct {
	cfg   *config
	io    stdio
	spans *spanLog // --trace; nil otherwise

	// fileTimeout is the "timeout" the --config file gives the server
	// (0: none), which applies when --timeout is not given.
	fileTimeout time.Duration
	// sandbox is the "sandbox" the --config file gives the server (nil:
	// none); info shows it.
	sandbox *snodo.Sandbox
	// lent is what the connection lends the command (its notifications'
	// Flush), filled in once it connected.
	lent connopts.Lent
}

// runCommand runs cfg.command on c.
func (s *session) runCommand(ctx context.Context, c *snodo.Client) error {
	switch s.cfg.command {
	case "info":
		return s.info(c)
	case "tools":
		return s.tools(ctx, c)
	case "call":
		return s.call(ctx, c)
	case "request":
		return s.request(ctx, c)
	case "listen":
		return s.listen(ctx, func(ctx context.Context, f snodo.Filter) (stream, error) { return c.Listen(ctx, f) })
	}
	return fmt.Errorf("snodo: no runner for command %q", s.cfg.command) // parseArgs rejects these
}

// close closes the connection and waits for the server to exit, so that
// snodo leaves no process behind; the shutdown grace period makes sure a
// server that ignores EOF is terminated.
func (s *session) close(c *snodo.Client) {
	_ = c.Close()
	select {
	case <-c.Done():
	case <-time.After(shutdownWait):
		fmt.Fprintf(s.io.err, "snodo: the server (pid %d) has not exited %v after its stdin closed; it may linger\n",
			c.ServerPID(), shutdownWait)
	}
	s.flushNotes(c)
}

// flushNotes waits a moment for the server's notifications to be printed.
func (s *session) flushNotes(c *snodo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.lent.Flush != nil {
		_ = s.lent.Flush(ctx)
	}
}
