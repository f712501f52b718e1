package supervisor

import (
	"log/slog"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/connopts"
)

// supervisorActor owns one supervised connection. It starts the server
// (in a goroutine: Connect blocks on the era handshake), watches the
// connection actor, and on an unexpected exit restarts the server after
// a back-off, unless the intensity limit is passed. Timers post messages
// to it; it never blocks and never uses ReceiveTimeout or futures.
type supervisorActor struct {
	s         *state
	calls     func(protoactor.Context) bool // runs call messages on the Client facade
	rs        intensity
	conn      *snodo.Client // the connection it watches; nil while restarting
	attempt   int           // numbers connect attempts; stale results are ignored
	timer     *time.Timer   // the pending back-off
	exitAt    time.Time     // when the server being replaced went away
	started   bool          // a first connection was made
	serverPID int           // the process id of the last server connected; 0 once reported gone
}

// Messages the supervisor sends itself.
type (
	// connected is a Connect result, posted by the connect goroutine.
	connected struct {
		attempt int
		client  *snodo.Client
		err     error
	}
	// retry is the back-off timer firing.
	retry struct{ attempt int }
)

func (*connected) IgnoreDeadLetterLogging() {}
func (*retry) IgnoreDeadLetterLogging()     {}

// Receive handles one message, under the state's life.Life (internal/life) (owner
// watch, exit signals, the first reason): a panic stops supervision (and
// with it every connection), since restarting this actor with empty state
// would orphan the connection it watches.
func (a *supervisorActor) Receive(ctx protoactor.Context) {
	switch msg := ctx.Message().(type) {
	case *protoactor.Started:
		a.connect(ctx)
	case *connected:
		a.onConnected(ctx, msg)
	case *retry:
		if msg.attempt == a.attempt+1 {
			a.connect(ctx)
		}
	case *protoactor.Terminated:
		a.onTerminated(ctx, msg)
	case *protoactor.Stopping:
		if a.timer != nil {
			a.timer.Stop()
		}
		if a.conn != nil {
			// Its Terminated could come after this actor is gone: a dead
			// letter. The Unwatch reaches it before shutdown's Close.
			ctx.Unwatch(a.conn.PID())
		}
		a.s.shutdown()
	case *protoactor.Stopped:
		a.emit(ctx, LifecycleEvent{Kind: kindStopped, Restarts: a.rs.inWindow(time.Now()), Err: a.s.why()})
		a.s.actorStopped()
	default:
		a.calls(ctx) // call messages, run off the mailbox
	}
}

// connect starts attempt a.attempt+1 in a goroutine that posts the result.
func (a *supervisorActor) connect(ctx protoactor.Context) {
	a.attempt++
	// The connection's owner is the supervisor's life context, not this
	// actor: the actor closes it in its Stopping, and no watch in either
	// direction outlives one of them (each would be a dead letter).
	attempt, self, s := a.attempt, ctx.Self(), a.s
	// The grace stops a server started as a command (a process of ours);
	// a connection of another transport ignores it. The supervisor's
	// owner (snodo.WithOwner) is not its connections'. lent gets the
	// connection's kill.
	lent := new(connopts.Lent)
	opts := append([]snodo.Option{connopts.ProcessGrace[snodo.Option](defaultShutdownGrace)}, s.cfg.connect...)
	opts = append(opts, snodo.WithActorSystem(s.sys), snodo.WithOrigin(s.cfg.origin()),
		connopts.Unowned[snodo.Option](), connopts.Lend[snodo.Option](lent))
	s.bg.Go(func() {
		c, err := s.target.Connect(s.life, opts...)
		if err == nil {
			s.applyLevel(c)
		}
		if err == nil && !s.adopt(c, lent.Kill) {
			_ = c.Close() // supervision ended meanwhile
			s.reap(c, lent.Kill)
			return
		}
		s.sys.Root.Send(self, &connected{attempt: attempt, client: c, err: err})
	})
}

func (a *supervisorActor) onConnected(ctx protoactor.Context, msg *connected) {
	if msg.attempt != a.attempt {
		return
	}
	if msg.err != nil {
		if !a.started && !crashed(msg.err) {
			// Nothing to restart: the command cannot start, or it is no
			// MCP server we can speak to. Connect returns this error.
			a.s.recordReason(msg.err)
			ctx.Stop(ctx.Self())
			return
		}
		a.failed(ctx, msg.err)
		return
	}
	c := msg.client
	a.conn = c
	ctx.Watch(c.PID())
	a.serverPID = c.ServerPID()
	ev := LifecycleEvent{Kind: kindConnected, ServerPID: a.serverPID}
	if a.started {
		ev.Downtime = time.Since(a.exitAt)
		ev.Restarts = a.rs.inWindow(time.Now())
	}
	a.started = true
	a.s.install(c)
	a.s.settleFirst(nil)
	a.emit(ctx, ev)
}

func (a *supervisorActor) onTerminated(ctx protoactor.Context, msg *protoactor.Terminated) {
	c := a.conn
	if c == nil || !msg.Who.Equal(c.PID()) {
		return
	}
	a.conn = nil
	reason := c.Err()
	if !unexpected(reason) {
		// Closed by hand, or its owner (this supervisor's life) ended:
		// supervision ends the same way.
		a.s.lost(c, reason, time.Time{})
		a.s.recordReason(reason)
		ctx.Stop(ctx.Self())
		return
	}
	a.exitAt = time.Now()
	delay, _ := a.schedule(ctx, reason)
	a.s.lost(c, reason, a.exitAt.Add(delay))
}

// failed handles a restart attempt whose Connect failed.
func (a *supervisorActor) failed(ctx protoactor.Context, err error) {
	if !a.started && a.exitAt.IsZero() {
		a.exitAt = time.Now()
	}
	delay, ok := a.schedule(ctx, err)
	if ok {
		a.s.mu.Lock()
		a.s.lastExit, a.s.nextTry = err, time.Now().Add(delay)
		a.s.notifyLocked()
		a.s.mu.Unlock()
	}
}

// schedule applies the intensity limit to one more restart after reason:
// either it arms the back-off timer and reports the delay, or it gives up
// and stops the actor.
func (a *supervisorActor) schedule(ctx protoactor.Context, reason error) (time.Duration, bool) {
	n := a.rs.add(time.Now())
	if a.rs.exceeded(n) {
		err := &gaveUpError{Restarts: a.rs.max, Window: a.rs.window, Last: reason}
		a.s.meters.GaveUp()
		a.emit(ctx, LifecycleEvent{Kind: kindGaveUp, Restarts: n - 1, Err: err})
		a.s.recordReason(err)
		ctx.Stop(ctx.Self())
		return 0, false
	}
	delay := a.s.cfg.backoff.delay(n)
	a.s.restarts.Add(1)
	a.s.meters.Restarted()
	a.emit(ctx, LifecycleEvent{Kind: kindExited, Restarts: n, Delay: delay, Err: reason, ServerPID: a.serverPID})
	a.serverPID = 0 // a failed attempt that follows has no server
	next, self, sys := a.attempt+1, ctx.Self(), a.s.sys
	a.timer = time.AfterFunc(delay, func() { sys.Root.Send(self, &retry{attempt: next}) })
	return delay, true
}

// emit logs ev and hands it to the observers.
func (a *supervisorActor) emit(ctx protoactor.Context, ev LifecycleEvent) {
	ev.Origin = a.s.cfg.origin()
	ev.Total = int(a.s.restarts.Load())
	l := a.log()
	switch ev.Kind {
	case kindConnected:
		if ev.Total > 0 {
			l.Info("supervisor: server restarted", "server_pid", ev.ServerPID, "downtime", ev.Downtime, "restarts", ev.Total)
		} else {
			l.Debug("supervisor: server connected", "server_pid", ev.ServerPID)
		}
	case kindExited:
		l.Warn("supervisor: server went away; restarting", append([]any{"reason", exitWords(ev.Err), "in", ev.Delay, "restarts_in_window", ev.Restarts}, sandboxAttr(ev.Err)...)...)
	case kindGaveUp:
		l.Error("supervisor: restart intensity passed; giving up", "error", ev.Err)
	case kindStopped:
		l.Debug("supervisor: stopped", "reason", ev.Err)
	}
	if fn := a.s.cfg.onEvent; fn != nil {
		fn(ev)
	}
	if pid := a.s.cfg.eventsTo; pid != nil {
		ctx.Send(pid, &ev)
	}
}

func (a *supervisorActor) log() *slog.Logger {
	return a.s.cfg.logger.With("supervisor", a.s.cfg.name)
}
