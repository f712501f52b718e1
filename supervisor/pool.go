package supervisor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/life"
	"github.com/snodo/snodo/internal/origins"
)

// Pool is N supervised connections to the same server (a snodo.Target). Each call
// goes to the member with the fewest calls in flight among those whose
// server is up (when none is, it waits for the first to come back, as a
// call waits for a restart); each member restarts on its own. A pool actor
// watches the owner and the members: owner → pool → members →
// connections, each stopped with the one before. Methods are safe for
// concurrent use; Close may be called any number of times. The typed
// calls (ListTools, CallTool, ReadResource, …) are the methods of its
// embedded snodo.Calls; its PID takes calls as messages (snodo.Call,
// snodo.ToolCall).
type Pool struct {
	snodo.Calls                               // every typed call: ListTools, CallTool, ReadResource, …
	calls       func(protoactor.Context) bool // runs call messages sent to its PID

	ctx    context.Context
	starts context.Context // members start under it: ctx, cancelled as the pool stops
	cancel context.CancelCauseFunc
	target snodo.Target
	cfg    *config
	sys    *protoactor.ActorSystem
	pid    *protoactor.PID
	owned  life.Life // the pool actor's stop reason and owner link

	mu       sync.Mutex
	members  []*Client
	serial   int                // names members name#N
	adding   int                // members Grow is starting: counted against maxPoolSize
	lastEnd  error              // why the last member that left on its own ended
	next     int                // where the least-loaded scan starts (spreads ties)
	closing  bool               // Close or the owner's end: no new members
	leaving  []*Client          // taken out of rotation by Shrink, not yet closed
	stopping []*Client          // the members being stopped with the pool
	starting bool               // the first members are starting: calls wait for them
	level    snodo.LoggingLevel // SetLoggingLevel's, for members Grow adds
	changed  chan struct{}      // closed and replaced when members, starting or closing change
	wmu      sync.Mutex         // guards woken only; taken under a member's state lock
	woken    chan struct{}      // closed and replaced when a member's server comes or goes (wake)
	bg       sync.WaitGroup     // member closers
	growing  sync.WaitGroup     // Grow's member starts, and the reaping of those the closing pool refused
	stopped  chan struct{}
	done     chan struct{}
}

// maxPoolSize bounds a pool's size (NewPool, StartPool, Grow): a pool
// starts its members' servers all at once, so a wrong size must not fork
// thousands of processes.
const maxPoolSize = 256

// NewPool starts size supervised connections to target (in parallel)
// and returns once all are connected; size is 1 to 256. ctx is
// the owner of the pool and every member; opts apply to each member
// (the owner and actor system WithConnectOptions may give, to the pool). If a member cannot start, NewPool leaves nothing running,
// as a failed snodo.Connect does: every server the pool started is
// stopped for good (stdin closed, then SIGTERM and SIGKILL to its
// process group for one that ignores EOF), and the error is
// returned once each is reaped, about 1 s later at most for servers that
// ignore EOF and SIGTERM.
func NewPool(ctx context.Context, target snodo.Target, size int, opts ...Option) (*Pool, error) {
	if ctx == nil {
		return nil, errNilContext("NewPool")
	}
	p, err := newPool(ctx, target, size, opts)
	if err != nil {
		return nil, err
	}
	if err := p.start(size); err != nil {
		return nil, err
	}
	return p, nil
}

// PoolReady is the message StartPool sends once the pool's first members
// have all started (Err nil) or one of them could not (Err says why; the
// pool is closed and, as for a failed NewPool, every server it started is
// stopped and reaped: Done is closed).
type PoolReady struct {
	quiet
	Pool         *Pool
	Err          error
	snodo.Origin // the pool's server (Member empty)
}

// StartPool is NewPool for actors: it returns the pool at once and sends
// a *PoolReady to pid when its size members have started, so an actor can
// start a pool from its Receive without blocking its mailbox. The pool is
// owned by pid and runs on system unless opts say otherwise (a
// snodo.WithOwner or WithActorSystem given in WithConnectOptions). Only bad arguments are an error here.
//
// Calls made before the pool is ready, as methods or as messages to its
// PID, wait for the first member to come up, as calls wait for a restart:
// for at most their Timeout request option (or WithMaxWait), and with
// FailFast they fail at once with a -32000 wrapping ErrStarting. If the
// pool cannot start, they fail with its error.
func StartPool(ctx context.Context, system *protoactor.ActorSystem, pid *protoactor.PID, target snodo.Target, size int, opts ...Option) (*Pool, error) {
	if ctx == nil {
		return nil, errNilContext("StartPool")
	}
	opts = append([]Option{startedBy(system, pid)}, opts...)
	p, err := newPool(ctx, target, size, opts)
	if err != nil {
		return nil, err
	}
	go func() {
		err := p.start(size)
		system.Root.Send(pid, &PoolReady{Pool: p, Err: err, Origin: snodo.Origin{Server: p.cfg.name}})
	}()
	return p, nil
}

// start grows the pool to size. If a member cannot start, the pool is
// closed, every server it started is stopped for good (cfg.kill, set
// before the stop so that members still starting see it too) and reaped,
// and the error is returned.
func (p *Pool) start(size int) error {
	err := p.Grow(size)
	p.mu.Lock()
	p.starting = false
	if err == nil && len(p.members) == 0 && !p.closing {
		// Every member connected, and every one ended since (the pool
		// waited for the Grow rather than stop at the first).
		err = p.lastEnd
	}
	p.notifyLocked()
	p.mu.Unlock()
	if err != nil {
		p.cfg.kill.Store(true)
		p.stop(err)
		_ = p.Close()
		<-p.done // bounded: each server is stopped for good (SIGTERM, then SIGKILL)
		return err
	}
	return nil
}

func newPool(ctx context.Context, target snodo.Target, size int, opts []Option) (*Pool, error) {
	if size < 1 || size > maxPoolSize {
		return nil, fmt.Errorf("supervisor: pool size %d must be between 1 and %d", size, maxPoolSize)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	sys, err := prepare(ctx, target, cfg, "pool")
	if err != nil {
		return nil, err
	}
	p := &Pool{
		ctx: ctx, target: target, cfg: cfg, sys: sys,
		starting: true,
		changed:  make(chan struct{}),
		woken:    make(chan struct{}),
		stopped:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.starts, p.cancel = context.WithCancelCause(ctx)
	p.Calls = snodo.Calls(calls.New[snodo.RequestOption, snodo.Era](p, p.inputHandling))
	p.calls = connopts.CallHandler[snodo.Option](p.Calls, snodo.Origin{Server: cfg.name}, func(ctx context.Context, f snodo.Filter, opts ...snodo.ListenOption) error {
		_, err := p.Listen(ctx, f, opts...)
		return err
	})
	connopts.AnswerDeadCalls[snodo.Option](sys, nil)
	p.owned = life.Life{Name: "pool", Logger: cfg.logger, Owner: cfg.owner, Parent: parentOf(cfg)}
	pid := p.owned.Spawn(sys, "snodo-pool", (&poolActor{p: p}).Receive)
	origins.Name(sys, pid, snodo.Origin{Server: cfg.name}) // replies to calls sent once it stopped
	p.mu.Lock()
	p.pid = pid
	p.mu.Unlock()
	p.owned.LinkContext(ctx)
	return p, nil
}

// Grow adds n members, started in parallel, and returns once they are
// connected; members that could not start are left out and their errors
// returned. The members in rotation and those being started may not pass
// 256 in all. While a Grow is starting members, the pool does not stop
// when its last member in rotation gives up: it stops after the Grow if
// none of them came up.
func (p *Pool) Grow(n int) error {
	if n < 1 {
		return fmt.Errorf("supervisor: Grow(%d): n must be at least 1", n)
	}
	p.mu.Lock()
	if p.closing {
		reason := p.owned.Reason()
		p.mu.Unlock()
		return jsonrpc.ClosedError(reason)
	}
	if size := len(p.members) + p.adding; n > maxPoolSize-size {
		p.mu.Unlock()
		return fmt.Errorf("supervisor: Grow(%d): the pool has %d members (started or starting) and may not pass %d", n, size, maxPoolSize)
	}
	p.adding += n
	names := make([]string, n)
	for i := range names {
		p.serial++
		names[i] = fmt.Sprintf("%s#%d", p.cfg.name, p.serial)
	}
	level := p.level
	p.growing.Add(n) // under mu while not closing: before shutdown, so before Done waits
	p.mu.Unlock()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			defer p.growing.Done()
			cfg := *p.cfg
			// Owned by the pool's ctx (cancelled as the pool stops, which
			// aborts a start in progress) and stopped by the pool actor's
			// Stopping, not by a watch of the pool actor: see shutdown.
			cfg.name, cfg.server, cfg.owner, cfg.parent, cfg.system, cfg.level = name, p.cfg.name, nil, nil, p.sys, level
			cfg.onChange = p.wake
			m, err := start(p.starts, p.target, &cfg)
			if err != nil {
				errs[i] = fmt.Errorf("pool member %s: %w", name, err)
				return
			}
			if errs[i] = p.add(m); errs[i] != nil {
				// The pool closed meanwhile and closed m: Done waits for
				// its server too. (The counter is above zero here.)
				p.growing.Go(func() { <-m.Done() })
			}
		})
	}
	wg.Wait()
	err := errors.Join(errs...)
	p.mu.Lock()
	p.adding -= n
	// The last member ended while this Grow started others (the pool
	// waited for them) and none of them is in rotation: the pool stops as
	// when its last member gives up. (The first Grow of a pool leaves
	// that to start, which kills the servers.)
	empty := len(p.members) == 0 && p.adding == 0 && !p.closing && !p.starting
	reason := cmp.Or(p.lastEnd, err)
	p.mu.Unlock()
	if empty && reason != nil {
		p.cfg.logger.Error("supervisor: every pool member has stopped; stopping the pool", "error", reason)
		p.stop(reason)
	}
	return err
}

// add puts a started member into rotation, or closes it if the pool is
// closing.
func (p *Pool) add(m *Client) error {
	p.mu.Lock()
	if p.closing {
		reason := p.owned.Reason()
		p.mu.Unlock()
		_ = m.Close()
		return jsonrpc.ClosedError(reason)
	}
	p.members = append(p.members, m)
	p.notifyLocked()
	p.mu.Unlock()
	p.sys.Root.Send(p.pid, &watchMember{pid: m.PID()})
	return nil
}

// Shrink takes n members out of rotation (the least loaded first), waits
// for the calls they are running to finish, for at most WithMaxWait (the
// bound of a wait that has none of its own: a call may have Timeout(-1)),
// then closes them: calls still running get a -32000 wrapping
// snodo.ErrClosed. At least one member stays. The subscriptions
// (Listen) the closed members held move to the members that stay.
//
// Until they are closed they still belong to the pool: a Close meanwhile
// closes them too (their calls get -32000) and Done waits for them.
func (p *Pool) Shrink(n int) error {
	p.mu.Lock()
	if p.closing {
		reason := p.owned.Reason()
		p.mu.Unlock()
		return jsonrpc.ClosedError(reason)
	}
	if n < 1 || n >= len(p.members) {
		size := len(p.members)
		p.mu.Unlock()
		return fmt.Errorf("supervisor: Shrink(%d): n must be between 1 and size-1 (%d)", n, size-1)
	}
	byLoad := slices.Clone(p.members)
	slices.SortStableFunc(byLoad, func(a, b *Client) int { return a.InFlight() - b.InFlight() })
	gone := byLoad[:n]
	p.members = slices.DeleteFunc(p.members, func(m *Client) bool { return slices.Contains(gone, m) })
	p.leaving = append(p.leaving, gone...)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range gone {
		wg.Go(func() {
			// Returns early if the pool's Close stops m.
			if !m.s.drained(m.s.cfg.maxWait) && m.Err() == nil {
				p.cfg.logger.Warn("supervisor: Shrink closes a pool member whose calls still run after WithMaxWait",
					"member", m.s.cfg.name, "calls", m.InFlight(), "max_wait", m.s.cfg.maxWait)
			}
			_ = m.Close()
		})
	}
	wg.Wait()
	p.mu.Lock()
	p.leaving = slices.DeleteFunc(p.leaving, func(m *Client) bool { return slices.Contains(gone, m) })
	closing := p.closing
	p.mu.Unlock()
	if closing {
		return jsonrpc.ClosedError(p.owned.Reason())
	}
	return nil
}

// Members are the members in rotation (len: the pool's size), for
// per-member calls and figures.
func (p *Pool) Members() []*Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.members)
}

// Size is the number of members in rotation (len(Members()), without
// copying them): what Grow and Shrink change. A pool whose members all
// left (Shrink, or give-ups past the restart intensity) has size 0 and
// takes no calls; a health check asks it per call.
func (p *Pool) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.members)
}

// PID is the pool actor; stopping it closes the pool.
func (p *Pool) PID() *protoactor.PID { return p.pid }

// Close closes every member as Client.Close does: each server's stdin is
// closed, calls in flight, waiting calls and later ones get a -32000
// wrapping snodo.ErrClosed, and Close returns without waiting for the
// servers to exit; they are reaped in the background, and Done tells
// when. It never waits on the caller's actor, so an actor may call it
// from its Stopping. Idempotent; it returns nil.
func (p *Pool) Close() error {
	p.stop(snodo.ErrClosed)
	<-p.stopped
	p.mu.Lock()
	members := p.stopping
	p.mu.Unlock()
	for _, m := range members {
		<-m.s.stopped
	}
	return nil
}

// Done is closed once the pool has stopped and every member's servers
// have been reaped.
func (p *Pool) Done() <-chan struct{} { return p.done }

// Err is why the pool stopped (nil while it runs): snodo.ErrClosed,
// snodo.ErrOwnerExited, or, when every member gave up, the last error wrapping ErrGaveUp.
func (p *Pool) Err() error {
	select {
	case <-p.stopped:
		return p.why()
	default:
		return nil
	}
}

func (p *Pool) why() error { return p.owned.Reason() }

// stop records the reason (the first wins) and stops the pool actor.
func (p *Pool) stop(reason error) { p.owned.Stop(reason) }

// notifyLocked wakes the calls waiting for a member. Hold mu.
func (p *Pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// wake tells the calls waiting in pick that a member's state changed (a
// server came up or went away, a member ended). Members call it under
// their state's mu: it takes only wmu.
func (p *Pool) wake() {
	p.wmu.Lock()
	close(p.woken)
	p.woken = make(chan struct{})
	p.wmu.Unlock()
}

// wakeup is the channel the next wake closes.
func (p *Pool) wakeup() <-chan struct{} {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.woken
}

// pick reserves the member for one call: the fewest in flight among
// those whose server is up, avoid last. When none is up (every member is
// restarting, or the pool is starting) it waits for the first to come up
// — whichever it is, so a member that gives up meanwhile fails no call —
// for at most the call's timeout (0: WithMaxWait; negative: only ctx).
// Unless wait (FailFast, for a call the caller did not ask to retry) it
// never waits: it picks among all members (the call then fails fast on a
// restarting one), or fails with ErrStarting.
func (p *Pool) pick(ctx context.Context, method string, avoid *Client, timeout time.Duration, wait bool) (*Client, error) {
	var expired <-chan time.Time
	t0 := time.Now()
	for {
		woken := p.wakeup() // before looking: a change after it wakes us
		p.mu.Lock()
		if p.closing || (len(p.members) == 0 && !p.starting) {
			reason := p.owned.Reason()
			p.mu.Unlock()
			if reason == nil {
				reason = snodo.ErrClosed
			}
			return nil, jsonrpc.ClosedError(reason)
		}
		if best := p.leastLoadedLocked(avoid, wait); best != nil {
			p.mu.Unlock()
			return best, nil
		}
		starting := len(p.members) == 0
		changed := p.changed
		p.mu.Unlock()
		if !wait {
			return nil, startingError()
		}
		if expired == nil {
			limit := p.cfg.maxWait
			if timeout != 0 {
				limit = timeout
			}
			if limit > 0 {
				t := time.NewTimer(limit)
				defer t.Stop()
				expired = t.C
			}
		}
		select {
		case <-changed:
		case <-woken:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-expired:
			if starting {
				return nil, startWaitTimeoutError(method, time.Since(t0))
			}
			return nil, waitTimeoutError(method, time.Since(t0))
		}
	}
}

// leastLoadedLocked picks and reserves a member: one that has not ended,
// then not avoid, then up, then with the fewest calls in flight; ties
// rotate. With upOnly it picks only a member that is up, and returns nil
// when none is. Hold mu.
func (p *Pool) leastLoadedLocked(avoid *Client, upOnly bool) *Client {
	type rank struct {
		ended, avoided, down bool
		load                 int
	}
	before := func(a, b rank) bool {
		switch {
		case a.ended != b.ended:
			return !a.ended
		case a.avoided != b.avoided:
			return !a.avoided
		case a.down != b.down:
			return !a.down
		}
		return a.load < b.load
	}
	var (
		best     *Client
		bestRank rank
	)
	n := len(p.members)
	for i := range n {
		m := p.members[(p.next+i)%n]
		up, ended := m.s.status()
		if upOnly && (!up || ended) {
			continue
		}
		r := rank{ended: ended, avoided: m == avoid && n > 1, down: !up, load: m.InFlight()}
		if best == nil || before(r, bestRank) {
			best, bestRank = m, r
		}
	}
	if best == nil {
		return nil
	}
	p.next++
	best.s.inflight.Add(1)
	return best
}

// poolCall runs fn on the least-loaded member. A call whose member ended
// (gave up, or was closed) before it reached a server, or whose server
// went away without reading it (snodo.ErrNotSent), goes to another member
// (the same one, restarted, when it is the only one to go to); an
// Idempotent call that lost its server is sent once more to another
// member.
func poolCall[T any](ctx context.Context, p *Pool, method string, opts []snodo.RequestOption,
	fn func(*snodo.Client, []snodo.RequestOption) (T, error)) (T, error) {
	set := calls.Of(opts)
	t0 := time.Now()
	var (
		m     *Client
		v     T
		err   error
		ended error // what the call met on the member it moved away from
		// unread: the call moves because its server went away without
		// reading it; the member may come back, so picking it again is fine.
		unread bool
	)
	for moved := 0; ; moved++ {
		prev := m
		m, err = p.pick(ctx, method, prev, remaining(set.Timeout, t0), !p.cfg.failFast)
		if err != nil {
			return v, err
		}
		if m == prev && !unread {
			// FailFast, and every member in rotation has ended: the pool
			// stops next. Do not go round again.
			m.s.release()
			return v, ended
		}
		var sent bool
		v, sent, err = callSent(ctx, m, method, remainingOpts(opts, set.Timeout, t0), true, fn) // the retry goes to another member
		if err == nil || sent || ctx.Err() != nil || moved >= maxPoolSize {
			break
		}
		if unread = notSent(err); unread {
			ended = err
			p.cfg.logger.Debug("supervisor: a pool member's server went away without reading the call; sending it to another member",
				"member", m.s.cfg.name, "method", method, "error", err)
			continue
		}
		if _, gone := m.s.status(); !gone {
			return v, err // a wait that timed out, say: not the member's end
		}
		ended = err
		p.cfg.logger.Debug("supervisor: a pool member ended before the call reached its server; sending it to another member",
			"member", m.s.cfg.name, "method", method, "error", err)
	}
	if err == nil || !set.Idempotent || !lostConnection(err) || ctx.Err() != nil {
		return v, err
	}
	// The retry waits for a member to be up even with FailFast: the
	// caller asked for it.
	m2, perr := p.pick(ctx, method, m, remaining(set.Timeout, t0), true)
	if perr != nil {
		return v, err
	}
	defer m2.s.release()
	p.cfg.logger.Debug("supervisor: retrying an idempotent call on another pool member", "method", method, "error", err)
	ro := remainingOpts(opts, set.Timeout, t0)
	wait := *m2.s.cfg
	wait.failFast = false
	v, _, err = onceWith(ctx, m2.s, &wait, method, &callConfig{opts: ro, Settings: calls.Of(ro)}, nil, time.Now(), fn)
	return v, err
}

// remaining is what is left of a call's timeout (0: none given; negative:
// none wanted) since t0, at least 1 ms.
func remaining(timeout time.Duration, t0 time.Time) time.Duration {
	if timeout <= 0 {
		return timeout
	}
	return max(timeout-time.Since(t0), time.Millisecond)
}

// remainingOpts are opts with the Timeout that remains since t0, when the
// wait so far counts.
func remainingOpts(opts []snodo.RequestOption, timeout time.Duration, t0 time.Time) []snodo.RequestOption {
	if waited := time.Since(t0); timeout > 0 && waited > time.Millisecond {
		// The wait for a member counts against the call's timeout.
		return append(append([]snodo.RequestOption(nil), opts...), snodo.Timeout(remaining(timeout, t0)))
	}
	return opts
}

// Request sends a request to the least-loaded member; see
// Client.Request. It is raw: an input_required result is returned as it
// is; the typed calls complete those rounds, each round going to the
// least-loaded member.
func (p *Pool) Request(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error) {
	return poolCall(ctx, p, method, opts, func(cl *snodo.Client, ro []snodo.RequestOption) (json.RawMessage, error) {
		return cl.Request(ctx, method, params, ro...)
	})
}

// SetLoggingLevel sets the log level of every member (and of their
// servers after restarts); see Client.SetLoggingLevel. The members are
// set in parallel, so members that are restarting make it wait once, not
// once each.
func (p *Pool) SetLoggingLevel(ctx context.Context, level snodo.LoggingLevel) error {
	p.mu.Lock()
	p.level = level // for members Grow adds
	p.mu.Unlock()
	return p.eachMember(func(m *Client) error { return m.SetLoggingLevel(ctx, level) })
}

// Notify sends a notification to every member's server (waiting through
// restarts like a call); see Client.Notify. The members are notified in
// parallel, so members that are restarting make it wait once, not once
// each.
func (p *Pool) Notify(ctx context.Context, method string, params any) error {
	return p.eachMember(func(m *Client) error { return m.Notify(ctx, method, params) })
}

// eachMember runs fn on every member in rotation, in parallel, and joins
// their errors in member order.
func (p *Pool) eachMember(fn func(*Client) error) error {
	members := p.Members()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			if err := fn(m); err != nil {
				errs[i] = fmt.Errorf("member %s: %w", m.s.cfg.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Era is the era of the members' servers (of the first member that has
// connected one); "" while none has.
func (p *Pool) Era() snodo.Era {
	for _, m := range p.Members() {
		if e := m.Era(); e != "" {
			return e
		}
	}
	return ""
}

// inputHandling runs the input requests of a round on the least-loaded
// member's connection, with the handler and bound given with
// WithConnectOptions.
func (p *Pool) inputHandling() calls.InputHandling {
	rounds := 0
	for _, m := range p.Members() {
		if rounds = m.s.maxRounds(); rounds != 0 {
			break
		}
	}
	return calls.InputHandling{Serve: p.serveInputs, MaxRounds: rounds}
}

func (p *Pool) serveInputs(ctx context.Context, reqs []*snodo.ServerRequest, timeout time.Duration) ([]json.RawMessage, error) {
	return poolCall(ctx, p, inputMethod, nil, func(cl *snodo.Client, _ []snodo.RequestOption) ([]json.RawMessage, error) {
		return calls.Calls[snodo.RequestOption, snodo.Era](cl.Calls).Input()().Serve(ctx, reqs, timeout)
	})
}

// Listen opens a supervised subscription on the least-loaded member; it
// follows that member's restarts, and moves to another member (with a
// ResubscribedMethod marker) when that one leaves the pool: Shrink takes
// it out, or it gives up. It ends when the pool closes. A member that
// leaves while Listen opens the subscription on it is passed over for
// another, as a call's is.
func (p *Pool) Listen(ctx context.Context, f snodo.Filter, opts ...snodo.ListenOption) (*snodo.Subscription, error) {
	var (
		prev *Client
		left error // what Listen met on the member it moved away from
	)
	for range maxPoolSize {
		m, err := p.pick(ctx, listenMethod, prev, 0, !p.cfg.failFast)
		if err != nil {
			return nil, err
		}
		if m == prev {
			// FailFast, and every member in rotation has ended.
			m.s.release()
			return nil, left
		}
		// The reservation pick made is held until the server acknowledged
		// the subscription: a Shrink that took m out meanwhile waits for
		// it before it closes m, and the subscription then moves as the
		// others on m do. Only a member that ended first fails it.
		sub, err := m.listen(ctx, p, f, opts, true)
		if err == nil || ctx.Err() != nil || !m.left(err) {
			return sub, err
		}
		p.cfg.logger.Debug("supervisor: a pool member left while Listen opened a subscription on it; opening it on another member",
			"member", m.s.cfg.name, "error", err)
		prev, left = m, err
	}
	return nil, jsonrpc.ClosedError(fmt.Errorf("supervisor: every pool member ended while Listen opened a subscription: %w", left))
}

// left reports whether err, met on c, is c's end: it left its pool
// (Shrink closed it, or it gave up), so what was meant for it goes to
// another member.
func (c *Client) left(err error) bool {
	if !errors.Is(err, snodo.ErrConnectionClosed) {
		return false
	}
	_, ended := c.s.status()
	return ended
}
