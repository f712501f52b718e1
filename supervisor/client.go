package supervisor

import (
	"context"
	"errors"
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/life"
	"github.com/snodo/snodo/internal/origins"
	"github.com/snodo/snodo/internal/ownercheck"
)

// Client is a supervised connection: a supervisor actor that owns one
// server (a snodo.Target) and restarts it when it exits unexpectedly. Calls go to
// whichever server is current. All methods are safe for concurrent use;
// Close may be called any number of times, from any goroutine. The typed
// calls (ListTools, CallTool, ReadResource, …) are the methods of its
// embedded snodo.Calls, as for snodo.Client; its PID takes calls as
// messages (snodo.Call, snodo.ToolCall).
type Client struct {
	snodo.Calls // every typed call: ListTools, CallTool, ReadResource, …
	s           *state
}

// Connect connects to target (snodo.Command or snodo.HTTP) under a
// supervisor and returns once the first server is connected. ctx is the owner, as for snodo.Connect:
// when it is done, supervision ends and the server's stdin is closed.
//
// A command that cannot start (not found, bad options, an era mismatch)
// fails here at once. A server that exits during its handshake is
// restarted like any other crash, and Connect fails with the
// error wrapping ErrGaveUp if the intensity limit is passed first.
func Connect(ctx context.Context, target snodo.Target, opts ...Option) (*Client, error) {
	if ctx == nil {
		return nil, errNilContext("Connect")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return start(ctx, target, cfg)
}

// prepare makes the checks Connect and NewPool share before anything
// starts, names what it will supervise, and returns the actor system it
// runs on. what names the starter in errors ("supervisor", "pool").
func prepare(ctx context.Context, target snodo.Target, cfg *config, what string) (*protoactor.ActorSystem, error) {
	if target.String() == "" {
		return nil, errors.New("supervisor: no server given; make the target with snodo.Command(name, args...) or snodo.HTTP(url)")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if cfg.name == "" {
		cfg.name = target.String()
	}
	sys := cfg.system
	if sys == nil {
		sys = snodoactor.Shared()
	}
	if err := ownercheck.Check(sys, cfg.owner, what); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if err := checkEventsTo(sys, cfg.eventsTo); err != nil {
		return nil, err
	}
	return sys, nil
}

func start(ctx context.Context, target snodo.Target, cfg *config) (*Client, error) {
	sys, err := prepare(ctx, target, cfg, "supervisor")
	if err != nil {
		return nil, err
	}
	s := newState(cfg, target, sys)
	c := &Client{s: s}
	s.facade = c
	c.Calls = snodo.Calls(calls.New[snodo.RequestOption, snodo.Era](c, c.inputHandling))
	connopts.AnswerDeadCalls[snodo.Option](sys, nil)
	s.life, s.stopLife = context.WithCancelCause(context.WithoutCancel(ctx))
	s.owned = life.Life{Name: "supervisor", Logger: cfg.logger.With("supervisor", cfg.name), Owner: cfg.owner, Parent: parentOf(cfg)}
	calls := connopts.CallHandler[snodo.Option](c.Calls, cfg.origin(), func(ctx context.Context, f snodo.Filter, opts ...snodo.ListenOption) error {
		_, err := c.Listen(ctx, f, opts...)
		return err
	})
	a := &supervisorActor{s: s, calls: calls, rs: intensity{max: cfg.maxRestarts, window: cfg.window}}
	pid := s.owned.Spawn(sys, "snodo-supervisor", a.Receive)
	origins.Name(sys, pid, cfg.origin()) // replies to calls sent once it stopped
	s.mu.Lock()
	s.pid = pid
	s.mu.Unlock()
	s.owned.LinkContext(ctx)
	<-s.first
	if err := s.firstErr; err != nil {
		<-s.done
		if errors.Is(err, ErrGaveUp) {
			return nil, err
		}
		return nil, fmt.Errorf("supervisor: first start of %s: %w", target, err)
	}
	return c, nil
}

// checkEventsTo says, before anything starts, whether the WithEventsTo
// actor can receive the events: it must be alive in the system they are
// sent from.
func checkEventsTo(sys *protoactor.ActorSystem, pid *protoactor.PID) error {
	if pid == nil {
		return nil
	}
	if _, ok := sys.ProcessRegistry.Get(pid); !ok {
		return fmt.Errorf("supervisor: WithEventsTo: actor %s is not alive in the supervisor's actor system (has it stopped? if it belongs to another system, pass that system with snodo.WithActorSystem in WithConnectOptions)", pid.Id)
	}
	return nil
}

// errNilContext refuses a nil ctx, which owns what would be started.
func errNilContext(fn string) error {
	return fmt.Errorf("supervisor: %s: nil context.Context; pass context.Background() or a ctx that owns what is started", fn)
}

// Origin names this supervised client's server in the messages sent to
// actors: Server its name (a pool's, for a member), Member its own name
// ("name#N" for a pool's member N).
func (c *Client) Origin() snodo.Origin { return c.s.cfg.origin() }

// PID is the supervisor actor. Stopping it (Stop, Poison, snodo.Exit)
// ends supervision like Close, with that reason.
func (c *Client) PID() *protoactor.PID { return c.s.pid }

// Current is the connection calls use now, nil while no server is up and
// running (it restarts, or supervision ended): it never waits. Await is
// the waiting form. Use them for what this type lacks (the server's
// process id, its capabilities…); do not Close the connection (that ends
// supervision, as a normal exit).
func (c *Client) Current() *snodo.Client {
	if cur := c.s.current(); cur != nil && cur.Err() == nil {
		return cur
	}
	return nil
}

// Await returns the running connection, waiting through a restart as
// calls do: for at most WithMaxWait (a -32001 wrapping ErrRestarting past
// it) and while ctx lasts. With FailFast it fails at once during a
// restart, with a -32000 wrapping ErrRestarting; once supervision has
// ended, with a -32000 wrapping why.
func (c *Client) Await(ctx context.Context) (*snodo.Client, error) {
	return c.s.acquire(ctx, "Await", nil, !c.s.cfg.failFast, c.s.cfg.maxWait)
}

// SetLoggingLevel sets the log level of the current server, as
// snodo.Client.SetLoggingLevel does, and of every server started after a
// restart. It waits through a restart like a call.
func (c *Client) SetLoggingLevel(ctx context.Context, level snodo.LoggingLevel) error {
	c.s.mu.Lock()
	c.s.level = level
	c.s.mu.Unlock()
	_, err := call(ctx, c, "logging/setLevel", nil, false, func(cl *snodo.Client, _ []snodo.RequestOption) (struct{}, error) {
		return struct{}{}, cl.SetLoggingLevel(ctx, level)
	})
	return err
}

// Restarts counts the restarts since Connect (attempts included).
func (c *Client) Restarts() int { return int(c.s.restarts.Load()) }

// InFlight counts the calls using this client right now, waiting ones
// included.
func (c *Client) InFlight() int { return int(c.s.inflight.Load()) }

// Close ends supervision like snodo.Client.Close: the current server's
// stdin is closed, and a server still running 2 s later (the default grace;
// or the snodo.WithShutdownGrace given in WithConnectOptions; 0: never)
// is sent SIGTERM, then SIGKILL, to its process group; calls in flight, waiting calls and
// later ones get a -32000 wrapping snodo.ErrClosed, and Close returns
// without waiting for the server to exit: it is reaped in the
// background, and Done tells when. It never waits on the caller's actor,
// so an actor may call it from its Stopping. Idempotent; it returns nil.
func (c *Client) Close() error {
	c.s.stop(snodo.ErrClosed)
	<-c.s.stopped
	return nil
}

// Done is closed once supervision has ended and every server it started
// has exited and been reaped.
func (c *Client) Done() <-chan struct{} { return c.s.done }

// Err is why supervision ended (nil while it runs): snodo.ErrClosed,
// snodo.ErrOwnerExited, or an error wrapping ErrGaveUp.
func (c *Client) Err() error { return c.s.Err() }

var (
	_ snodo.Session = (*Client)(nil)
	_ snodo.Session = (*Pool)(nil)
)
