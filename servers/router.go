package servers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/life"
	"github.com/snodo/snodo/internal/ownercheck"
	"github.com/snodo/snodo/internal/supopts"
	"github.com/snodo/snodo/supervisor"
)

// Router is an actor that owns one supervised pool per server of a File
// (each of its Pool size, with its supervision options) and routes call
// messages to them by server name. Send it a *To with ctx.Request; the
// server's pool answers the sender directly with exactly one *snodo.Reply
// (or *snodo.ToolReply), so the router's mailbox never waits on a server.
// Its methods are safe for concurrent use.
type Router struct {
	file  *File
	sys   *protoactor.ActorSystem
	owner *protoactor.PID
	ctx   context.Context
	opts  []supervisor.Option
	life  life.Life

	mu      sync.Mutex
	pools   map[string]*supervisor.Pool
	pending int // pools whose PoolReady has not come yet
	errs    []error
	ready   chan struct{}
	stopped chan struct{}
	done    chan struct{}
}

// To asks the router to send Call (a *snodo.Call, *snodo.ToolCall or
// *snodo.ListenCall) to the server called
// Server. The reply comes from that server's pool,
// to the Call's ReplyTo or else the sender of the To. A name the file
// does not have is answered at once with an error wrapping
// ErrUnknownServer.
type To struct {
	quiet
	Server string
	Call   any
}

// RouterReady is sent to the router's owner actor once every pool has
// started; Err joins the errors of the servers that could not (their
// pools are closed, and calls to them fail with -32000 wrapping it).
type RouterReady struct {
	quiet
	Router *Router
	Err    error
}

// wrappedCall is the call message a To carries and the server it names
// (true), for a dead letter's answer: a To sent to a router that has
// stopped is still answered, with a -32000, as snodo answers every call
// message sent to an actor that is gone.
func wrappedCall(msg any) (any, string, bool) {
	if t, ok := msg.(*To); ok && t != nil {
		return t.Call, t.Server, true
	}
	return nil, "", false
}

// ErrUnknownServer: a To named a server the router does not have, or
// File.Lookup a name its file does not have.
var ErrUnknownServer = errors.New("servers: no such server")

// StartRouter starts a pool for every server of f, all at once, and
// returns the router without waiting for them. owner, when not nil, owns
// the router (it stops when owner terminates) and receives a
// *RouterReady; ctx owns it too. opts apply to every pool after the
// options the file gives each server, and those a program appended to a
// Server's Options after them, for that server only. Calls sent before a pool is ready wait for its first
// member, as described at supervisor.StartPool. Connect options in opts
// (supervisor.WithConnectOptions) reach every server, so give those of
// one transport only (snodo.WithEnv, WithDir, WithStderr for a started
// process; WithHTTPHeader, WithOAuth for an http server) appended to a
// Server's Options, or in the file: the other transport refuses them, and
// that server's pool fails to start with the error naming the option.
//
// The router and its pools run on one actor system: system, or when it
// is nil the one a snodo.WithActorSystem among opts' connect options
// (supervisor.WithConnectOptions) names, or else snodo's shared one. opts
// naming a system other than a non-nil system are an error. The router
// owns its pools: opts naming an owner (snodo.WithOwner) are an error
// (the router's owner is owner). The router logs (a panic in its actor)
// to the logger a snodo.WithLogger among opts' connect options names, as
// its pools do; without one, nowhere.
func StartRouter(ctx context.Context, system *protoactor.ActorSystem, owner *protoactor.PID, f *File, opts ...supervisor.Option) (*Router, error) {
	switch {
	case ctx == nil:
		return nil, errors.New("servers: StartRouter: nil context.Context; pass context.Background() or the ctx that owns the router")
	case f == nil:
		return nil, errors.New("servers: StartRouter: nil *servers.File; pass one from Load or Parse")
	}
	if len(f.Servers) == 0 {
		return nil, &FileError{File: f.Path, Err: errors.New("no server to start")}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	named, owned, logger, err := supopts.Setup(opts)
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	switch {
	case owned != nil:
		return nil, errors.New("servers: StartRouter: snodo.WithOwner among the connect options names an owner for the pools; the router owns them (pass the owner as StartRouter's owner, or drop the option)")
	case system == nil && named != nil:
		system = named
	case system == nil:
		system = snodoactor.Shared()
	case named != nil && named != system:
		return nil, errors.New("servers: StartRouter: snodo.WithActorSystem names another system than the router's; the router and its pools run on one system (pass it as StartRouter's system, or drop the option)")
	}
	if err := ownercheck.Check(system, owner, "router"); err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	r := &Router{
		file: f, sys: system, owner: owner, ctx: ctx, opts: opts,
		pools:   map[string]*supervisor.Pool{},
		pending: len(f.Servers),
		ready:   make(chan struct{}),
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
	}
	r.life = life.Life{Name: "router", Logger: logger, Owner: owner}
	connopts.AnswerDeadCalls[snodo.Option](system, wrappedCall)
	r.life.Spawn(system, "snodo-router", r.receive)
	r.life.LinkContext(ctx)
	return r, nil
}

// NewRouter is StartRouter for code that is not an actor: it returns
// once every pool has started, or fails with the first errors (and the
// router closed). The router runs on the system a snodo.WithActorSystem
// among opts' connect options names (else snodo's shared one), with its
// pools.
func NewRouter(ctx context.Context, f *File, opts ...supervisor.Option) (*Router, error) {
	r, err := StartRouter(ctx, nil, nil, f, opts...)
	if err != nil {
		return nil, err
	}
	select {
	case <-r.ready:
	case <-r.stopped:
	}
	if err := r.startErr(); err != nil {
		_ = r.Close()
		return nil, err
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// PID is the router actor: send it *To messages.
func (r *Router) PID() *protoactor.PID { return r.life.PID() }

// Pool is the pool of the server called name. A name the file does not
// have is an error wrapping ErrUnknownServer that lists the names it has.
func (r *Router) Pool(name string) (*supervisor.Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pools[name]; ok {
		return p, nil
	}
	return nil, r.unknown(name)
}

// Ready is closed once every pool has reported its start.
func (r *Router) Ready() <-chan struct{} { return r.ready }

// Close stops the router and with it every pool, its children (their
// calls end with a -32000 wrapping snodo.ErrOwnerExited): it returns
// without waiting for the servers to exit (each gets its shutdown grace);
// Done tells when they have. Idempotent; it returns nil.
func (r *Router) Close() error {
	r.life.Stop(snodo.ErrClosed)
	<-r.stopped
	return nil
}

// Done is closed once the router has stopped and every server has been
// reaped.
func (r *Router) Done() <-chan struct{} { return r.done }

// Err is why the router stopped, nil while it runs.
func (r *Router) Err() error {
	select {
	case <-r.stopped:
		return r.life.Reason()
	default:
		return nil
	}
}

func (r *Router) unknown(name string) error {
	return fmt.Errorf("%w %q in %s (it has %q)", ErrUnknownServer, name, r.file.Path, r.file.names())
}

func (r *Router) startErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

func (r *Router) receive(ctx protoactor.Context) {
	switch msg := ctx.Message().(type) {
	case *protoactor.Started:
		r.startPools(ctx)
	case *supervisor.PoolReady:
		r.poolReady(ctx, msg)
	case *To:
		r.route(ctx, msg)
	case *protoactor.Stopping:
		r.mu.Lock()
		pools := make([]*supervisor.Pool, 0, len(r.pools))
		for _, p := range r.pools {
			pools = append(pools, p)
		}
		r.mu.Unlock()
		// The pools are children: protoactor-go stops them right after
		// this (a Close here would make its own Stop of each a dead
		// letter); their calls end with the router's end.
		go func() {
			for _, p := range pools {
				<-p.Done()
			}
			close(r.done)
		}()
	case *protoactor.Stopped:
		close(r.stopped)
	}
}

func (r *Router) startPools(ctx protoactor.Context) {
	for _, s := range r.file.Servers {
		// The options for every server go between the file's and the
		// server's own. The router's system and ownership come last: the
		// pools are the router's children (in its Children, stopped with
		// it), whatever opts say.
		n := min(s.fromFile, len(s.Options))
		opts := slices.Concat(s.Options[:n], r.opts, s.Options[n:],
			[]supervisor.Option{supervisor.WithParent(ctx)})
		p, err := supervisor.StartPool(r.ctx, r.sys, ctx.Self(), s.Target, s.Pool, opts...)
		r.mu.Lock()
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("server %q: %w", s.Name, err))
			r.pending--
		} else {
			r.pools[s.Name] = p
		}
		r.mu.Unlock()
	}
	r.maybeReady(ctx)
}

func (r *Router) poolReady(ctx protoactor.Context, msg *supervisor.PoolReady) {
	r.mu.Lock()
	r.pending--
	if msg.Err != nil {
		for name, p := range r.pools {
			if p == msg.Pool {
				r.errs = append(r.errs, fmt.Errorf("server %q: %w", name, msg.Err))
			}
		}
	}
	r.mu.Unlock()
	r.maybeReady(ctx)
}

// maybeReady reports readiness once every pool has.
func (r *Router) maybeReady(ctx protoactor.Context) {
	r.mu.Lock()
	if r.pending > 0 {
		r.mu.Unlock()
		return
	}
	err := errors.Join(r.errs...)
	r.mu.Unlock()
	select {
	case <-r.ready:
		return
	default:
	}
	close(r.ready)
	if r.owner != nil {
		ctx.Send(r.owner, &RouterReady{Router: r, Err: err})
	}
}

// route forwards the call to its server's pool, keeping the sender, so
// the pool answers the caller directly.
func (r *Router) route(ctx protoactor.Context, msg *To) {
	if msg == nil {
		if ctx.Sender() != nil {
			ctx.Respond(&snodo.Reply{Err: jsonrpc.NewLocalError(snodo.CodeInvalidParams, "servers: a nil *servers.To was sent: send &servers.To{Server: …, Call: …}")})
		}
		return
	}
	r.mu.Lock()
	p, ok := r.pools[msg.Server]
	r.mu.Unlock()
	if ok {
		ctx.RequestWithCustomSender(p.PID(), msg.Call, ctx.Sender()) // the pool answers a nil call too
		return
	}
	err := r.unknown(msg.Server)
	send := func(to *protoactor.PID, reply any) { // to the call's ReplyTo, else the sender
		if to == nil {
			to = ctx.Sender()
		}
		if to != nil {
			ctx.Send(to, reply)
		}
	}
	switch c := msg.Call.(type) {
	case *snodo.Call:
		if c == nil {
			send(nil, &snodo.Reply{Err: err})
		} else {
			send(c.ReplyTo, &snodo.Reply{Tag: c.Tag, Err: err})
		}
	case *snodo.ToolCall:
		if c == nil {
			send(nil, &snodo.ToolReply{Err: err})
		} else {
			send(c.ReplyTo, &snodo.ToolReply{Tag: c.Tag, Err: err})
		}
	case *snodo.ListenCall:
		if c == nil {
			send(nil, &snodo.ListenReply{Err: err})
		} else {
			send(c.ReplyTo, &snodo.ListenReply{Tag: c.Tag, Err: err})
		}
	default:
		ctx.Logger().Warn("servers: a *To whose Call is not a call message (*snodo.Call, ToolCall, ListenCall) was dropped",
			"server", msg.Server, "type", fmt.Sprintf("%T", msg.Call))
	}
}

// quiet, embedded in a message type, keeps that message out of
// protoactor's dead-letter log when its receiver is gone: the methods
// protoactor looks for are plumbing, not part of the message's API.
type quiet struct{}

// IgnoreDeadLetterLogging marks the message for protoactor.
func (quiet) IgnoreDeadLetterLogging() {}
