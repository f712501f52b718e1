package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/dispatch"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/life"
	"github.com/snodo/snodo/internal/recovered"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/internal/serverproc"
)

// Conn is one connection to a server, owned by a connection actor: over
// stdio the actor owns the server's child process; over any other
// Transport it owns the transport's Channel. Its methods are safe for
// concurrent use by any number of goroutines and actors.
type Conn struct {
	cfg    Config
	system *protoactor.ActorSystem
	pid    *protoactor.PID
	life   life.Life          // the stop reason, the owner link, exit signals
	proc   *process           // stdio: the child; nil over another transport
	idle   *http.Transport    // the wrapped HTTP client's own transport, closed at the end; nil: none
	ch     connection.Channel // another transport's open Channel; nil for stdio
	out    outbound           // wr, or ch's channelOut
	wr     *writer            // stdio: the writer of the child's stdin; nil otherwise
	// ready is closed once Start has set the connection up: a
	// Channel's first messages wait for it. Nil for stdio.
	ready chan struct{}
	// answer is answerScanned, the callerrun.Request.Answer of every
	// request a Channel may leave to its caller.
	answer func(env jsonrpc.Envelope, msg []byte)
	table  *table
	disp   *dispatch.Dispatcher

	// notifyCtx is done once the connection stops; OnNotification gets it.
	notifyCtx  context.Context
	stopNotify context.CancelFunc

	stopped chan struct{} // the actor has stopped
	exited  chan struct{} // the process has been reaped
	// drained: stdout's reader and stderr's tap have ended (a flag, not
	// a channel: only maybeDone looks, never waits).
	drained atomic.Bool
	// readerDone is closed when the reader has ended; readEOF, written
	// before, says whether it read to EOF (rather than being cut off).
	readerDone chan struct{}
	readEOF    bool
	// gone is closed once the server has exited and every holder of its
	// stdout has closed it: nothing is left to signal.
	gone chan struct{}
	// unread is what the server left unread on its stdin when it went
	// away (exit, or stdout closed): -2 while it runs, -1 unknown.
	unread atomic.Int64
	// unreadFrom is set as the connection stops, before its callers are
	// failed: a request whose line's ticket t has t-1 >= unreadFrom was
	// never read by the server (see settleUnread). MaxInt64: none is
	// known to be.
	unreadFrom atomic.Int64
	// readLog limits the reader's records about the server's output.
	readLog logLimit

	// metaOK is a copy of the last CallOptions.Meta found to be one JSON
	// object on one line (checkMeta).
	metaOK atomic.Pointer[[]byte]
	// paramsOK is a copy of the last raw params checked and found to be
	// one JSON value on one line, with whether _meta splices into them
	// (marshalParams); paramsSeen is the address where the last raw params
	// that missed it began (an address only: it keeps nothing alive), as
	// the same slice twice in a row is worth a copy.
	paramsOK   atomic.Pointer[checkedParams]
	paramsSeen atomic.Uintptr

	done     chan struct{} // all three
	doneOnce sync.Once
	exitErr  error // what Wait said, once exited is closed
}

// Start starts the server and its connection actor. ctx is the owner
// unless cfg.OwnerContext is set: when it is done, the connection closes.
// A command that cannot be started is an error here, at once.
func Start(ctx context.Context, cfg Config) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.System == nil {
		cfg.System = snodoactor.Shared()
	}
	owner := cfg.OwnerContext
	if owner == nil {
		owner = ctx
	}
	if err := owner.Err(); err != nil {
		return nil, err
	}
	t, err := transportOf(&cfg)
	if err != nil {
		return nil, err
	}
	c := &Conn{
		cfg:        cfg,
		system:     cfg.System,
		table:      newTable(),
		stopped:    make(chan struct{}),
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		gone:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	if _, stdio := t.(stdioTransport); stdio {
		if c.proc, err = startProcess(&c.cfg); err != nil {
			return nil, err
		}
		// Every record says which connection it is about.
		c.cfg.Logger = c.cfg.Logger.With("server", filepath.Base(cfg.Command), "server_pid", c.proc.cmd.Process.Pid)
		c.cfg.Trace = safeTrace(cfg.Trace, c.cfg.Logger)
		c.wr = newWriter(c.proc.stdin, cfg.MaxWriteQueue, c.writeFailed)
		c.wr.company = c.table.company
		c.wr.beforeClose = c.settleUnread
		c.wr.trace = c.cfg.Trace
		c.wr.bytes = cfg.Metrics
		c.out = c.wr
	} else {
		if cfg.URL != "" && cfg.WrapTransport != nil {
			client, idle, err := wrappedClient(&cfg)
			if err != nil {
				return nil, err
			}
			t, c.idle = urlTransport(&cfg, client), idle
		}
		c.cfg.Logger = c.cfg.Logger.With("server", transportName(t))
		c.cfg.Trace = safeTrace(cfg.Trace, c.cfg.Logger)
		c.ready = make(chan struct{})
		c.answer = c.answerScanned // made once: no method value per request
		peer := connection.Peer{Receive: c.receive1, Fail: c.failRequest, MaxMessageBytes: cfg.MaxLineBytes, Timeout: cfg.Timeout, Logger: c.cfg.Logger}
		if c.ch, err = t.Open(ctx, peer); err != nil {
			if c.idle != nil {
				c.idle.CloseIdleConnections()
			}
			return nil, err
		}
		o := newChannelOut(c.ch, c.channelFailed)
		o.trace = c.cfg.Trace
		o.bytes = cfg.Metrics
		c.out = o
		close(c.readerDone) // no reader goroutine: the transport calls receive1
	}
	c.notifyCtx, c.stopNotify = context.WithCancel(context.Background())
	c.disp = dispatch.NewDispatcher(dispatch.Config{
		Handler: cfg.Handler,
		Max:     cfg.MaxServerRequests,
		Respond: c.respond,
		Logger:  c.cfg.Logger,
		Refused: cfg.Metrics.HandlerRefused,
		Observe: cfg.ObserveHandler,
	})
	c.life = life.Life{Name: "connection", Logger: c.cfg.Logger, Owner: cfg.Owner}
	c.pid = c.life.Spawn(c.system, "snodo-conn", c.receive)
	c.unread.Store(-2)
	c.unreadFrom.Store(math.MaxInt64)
	if c.proc != nil {
		go c.readLoop()
		go c.waitProcess()
	} else {
		go c.waitChannel()
	}
	c.life.LinkContext(owner)
	if c.ready != nil {
		close(c.ready)
	}
	if cfg.Lend != nil {
		*cfg.Lend = connseam.Lent{ProcessID: c.processID(), ServeInputs: c.serveInputs,
			LeftInputUnread: c.leftInputUnread, InFlight: c.inFlight, Kill: c.kill}
	}
	return c, nil
}

// PID is the connection actor, in System. Stopping it (Stop, Poison)
// closes the connection; snodo.Exit stops it with a reason that waiting
// callers see.
func (c *Conn) PID() *protoactor.PID { return c.pid }

// System is the actor system the connection actor (PID) runs on:
// Config.System, or actor.Shared() when that was nil. Stop, Poison or
// send to PID through it.
func (c *Conn) System() *protoactor.ActorSystem { return c.system }

// processID is the server's operating-system process id; 0 for a
// Streamable HTTP endpoint. Lent as connseam.Lent's ProcessID
// (snodo's Client.ServerPID).
func (c *Conn) processID() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// Close flushes what is already queued for the server (for at most two
// seconds), closes its stdin and returns without waiting for the server to
// exit. Requests in flight fail at once with -32000. Close never signals
// or kills the server; its output is drained and it is reaped when it
// exits. Close is idempotent and safe from any goroutine; it returns nil.
func (c *Conn) Close() error {
	c.terminate(sentinel.ErrClosed)
	<-c.stopped
	<-c.out.closed()
	return nil
}

// Done is closed once the server has exited (and been reaped), its output
// has been drained (for at most one second after the exit: a grandchild
// may hold it open) and the connection actor has stopped.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection stopped (nil while it runs). It wraps one of
// snodo.ErrClosed, snodo.ErrServerExited, snodo.ErrStdinClosed, snodo.ErrStdoutClosed,
// snodo.ErrNotReading, snodo.ErrOwnerExited, snodo.ErrActorStopped (Stop or Poison
// of PID), snodo.ErrActorPanicked, or the reason given to snodo.Exit. When
// the server's exit is why (snodo.ErrServerExited) and it exited with a
// non-zero status or a signal, Err also wraps what the server's Wait
// returned: errors.As(err, &exitErr) with an *exec.ExitError gives the
// exit code.
func (c *Conn) Err() error { return c.life.Reason() }

// inFlight counts the requests waiting for an answer. Lent as
// connseam.Lent's InFlight (tests check that no request is left behind).
func (c *Conn) inFlight() int { return c.table.inFlight() }

// terminate records why the connection stops (the first reason wins) and
// stops the actor, from any goroutine but the actor's.
func (c *Conn) terminate(reason error) { c.life.Stop(reason) }

// closedErr is the error for callers that come once the connection is
// stopping: the -32000 every caller gets, saying the state it is in
// (draining: the server still runs and its output is discarded; reaped:
// it has exited).
func (c *Conn) closedErr() error {
	state, reason := c.lifeState(), c.Err()
	if reason == nil {
		reason = sentinel.ErrActorStopped
	}
	return jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed,
		"connection closed: "+reason.Error()+" (connection "+state.String()+")", jsonrpc.ErrConnectionClosed, reason)
}

// writeFailed: the server closed its stdin (EPIPE) or the pipe broke. A
// server that has exited breaks the pipe too: give the reader a moment to
// see stdout's EOF and report the exit status, which says more.
func (c *Conn) writeFailed(err error) {
	if errors.Is(err, errNotReading) {
		c.terminate(&exitReason{what: fmt.Sprintf("server is not reading its stdin: the lines snodo writes to it on its own (answers to its requests, cancellations) would pass %d bytes waiting to be written, the callers' share counted up to WithMaxWriteQueue (twice WithMaxWriteQueue in all)", 2*c.cfg.MaxWriteQueue),
			stderr: c.proc.stderr.lastLines(stderrTailLine), cause: sentinel.ErrNotReading})
		return
	}
	reason := &exitReason{what: "server closed its stdin (write failed: " + err.Error() + ")", stderr: c.proc.stderr.lastLines(stderrTailLine), cause: sentinel.ErrStdinClosed}
	go func() {
		select {
		case <-c.exited: // reap has recorded the exit (the first reason wins)
		case <-time.After(2 * exitGrace):
		}
		c.terminate(reason)
	}()
}

// shutdown runs on the actor while it stops: fail every caller, cancel
// handlers, and close stdin after flushing what is queued.
func (c *Conn) shutdown(ctx protoactor.Context) {
	reason := c.life.Reason() // settled by Life before Stopping
	c.settleUnread()
	c.table.close(jsonrpc.ClosedError(reason))
	c.stopNotify()
	c.cfg.Metrics.Exited(serverproc.ExitCause(reason))
	if c.cfg.OnStop != nil {
		c.cfg.OnStop(reason)
	}
	c.disp.Stop(ctx)
	c.out.close()
	if grace := c.cfg.ShutdownGrace; grace > 0 {
		go c.forceExit(grace)
	}
}

// forceExit signals a server that ignores EOF: SIGTERM to its process
// group after grace, SIGKILL after another grace.
func (c *Conn) forceExit(grace time.Duration) {
	if c.proc == nil {
		return // another transport: no process to signal
	}
	for _, sig := range forceSignals {
		select {
		case <-c.gone: // a grandchild holding stdout is still signalled
			return
		case <-time.After(grace):
			c.cfg.Logger.Warn("snodo: server ignored EOF; signalling its process group",
				"command", c.cfg.Command, "signal", sig.String(), "state", c.lifeState())
			signalGroup(c.proc.cmd, sig)
		}
	}
}

// settleUnread works out, once, from which byte of the stream to stdin
// the server is known never to have read (unreadFrom, in terms of the
// writer's tickets). It runs as the connection stops, before its callers
// are failed, and as the writer closes stdin (after a failed write, the
// pipe can no longer be looked at). It is known only once nothing can
// read the pipe any more: the server has gone and no process it started
// holds its stdin (then nothing written can be read later, and writing
// fails). Then the server read at most what was written less what is
// left in the pipe. Otherwise, or where the system cannot tell (it can on
// Linux), every line written counts as read.
func (c *Conn) settleUnread() {
	if c.proc == nil || c.unreadFrom.Load() != math.MaxInt64 {
		return // another transport: no pipe to look at; or settled
	}
	if !noReaders(c.proc.stdin) { // first: once it holds, the pipe no longer changes
		return
	}
	// Nobody reads: a write under way fails at once (EPIPE); wait for it,
	// so that its bytes are counted as they went out, not all of them.
	written, dropped := c.wr.stream(settleWait)
	unread := int64(unreadInput(c.proc.stdin))
	if unread < 0 || unread > written {
		return
	}
	c.unreadFrom.CompareAndSwap(math.MaxInt64, written-unread+dropped)
}

// settleWait bounds how long settleUnread waits for a write under way to
// fail once nobody reads the pipe: past it, the whole write counts as
// written.
const settleWait = 100 * time.Millisecond

// notSent is err, the table's close error a request got, wrapping
// snodo.ErrNotSent as well when the request is known never to have been read by
// the server: its line was refused by the writer (refused), or starts
// where the server had stopped reading (ticket, see settleUnread). Any
// other error is returned as it is.
func (c *Conn) notSent(err error, ticket uint64, refused bool) error {
	closed := c.table.closed.Load()
	if closed == nil || err != *closed {
		return err
	}
	if !refused && (ticket == 0 || int64(ticket-1) < c.unreadFrom.Load()) {
		return err
	}
	return notSentError(err)
}

// noteUnread records, once, what the server left unread on its stdin as
// it went away.
func (c *Conn) noteUnread() {
	n := int64(unreadInput(c.proc.stdin))
	if c.wr.written.Load() == 0 {
		n = 1 << 62 // it went away before anything reached it
	}
	c.unread.CompareAndSwap(-2, n)
}

// leftInputUnread reports whether the server is known to have gone away
// (exited, or closed its stdout) without reading everything written to
// its stdin — bytes were still waiting in the pipe, or a write to it
// failed — so it did not die of the last line it was sent. False while it
// runs, and where the system cannot tell (it can on Linux). A caller
// that retries with a fresh server uses it to tell a server that died of
// the line it was sent (do not send that line again) from one that went
// away on its own: snodo.Connect restarts a server that died of its
// probe only when this is false. Lent as connseam.Lent's
// LeftInputUnread.
func (c *Conn) leftInputUnread() bool {
	return c.unread.Load() > 0 || errors.Is(c.life.Reason(), sentinel.ErrStdinClosed)
}

// kill closes the connection and stops the server for good: if it has
// not exited grace after its stdin was closed, its process group (it and
// the helpers it started) gets SIGTERM, and SIGKILL another grace later.
// It returns once the server has been reaped and its output drained, or
// about 2 s after the SIGKILL. For a server the caller gives up on before
// using it (Connect failing); Close alone never signals (a caller who
// wants the server stopped sets Config.ShutdownGrace and waits for
// Done). Lent as connseam.Lent's Kill.
func (c *Conn) kill(grace time.Duration) {
	_ = c.Close()
	c.forceExit(grace)
	select {
	case <-c.done:
	case <-time.After(drainGrace + time.Second):
	}
}

func (c *Conn) actorStopped() {
	close(c.stopped)
	c.maybeDone()
}

func (c *Conn) maybeDone() {
	select {
	case <-c.stopped:
	default:
		return
	}
	select {
	case <-c.exited:
	default:
		return
	}
	if !c.drained.Load() {
		return
	}
	c.doneOnce.Do(func() { close(c.done) })
}

// safeTrace runs trace so that a panic in it is logged and the line goes
// on as if untraced: a sent line is traced under the writer's lock and a
// received one on the reader goroutine, so a panic there would wedge every
// later request or end the program. Nil stays nil (no cost).
func safeTrace(trace func(connection.Direction, []byte), logger *slog.Logger) func(connection.Direction, []byte) {
	if trace == nil {
		return nil
	}
	return func(dir connection.Direction, line []byte) {
		defer func() {
			if r := recover(); r != nil {
				recovered.Log(logger, "snodo: the wire trace hook panicked; the line goes on untraced", r, "direction", dir.String())
			}
		}()
		trace(dir, line)
	}
}
