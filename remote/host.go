package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/natsname"
	"github.com/snodo/snodo/internal/pin"
	"github.com/snodo/snodo/supervisor"
)

// Defaults of a Host.
const (
	// defaultMaxHeld bounds the calls and subscriptions one host holds at
	// once; past it a call is refused before it runs (the caller retries
	// it on another host).
	defaultMaxHeld = limits.MaxHeld
	// defaultDrainTimeout bounds the graceful drain a Host runs when the
	// ctx given to NewHost is done.
	defaultDrainTimeout = limits.DrainTimeout

	// timeoutGrace is added to a caller's timeout on the host: the caller's
	// own timer fires first and sends the cancel; the host's is a backstop
	// for a cancel that never arrives.
	timeoutGrace = time.Second
	// maxCancelled bounds the cancels a host remembers for calls it has
	// not seen (yet); past it the oldest half is forgotten.
	maxCancelled = 4096
	// maxCancelBytes bounds one cancel (a reply subject: nats.go's are
	// about 60 bytes). A longer one is no reply subject a caller of this
	// package makes: it is dropped, so the remembered cancels hold at most
	// maxCancelled*maxCancelBytes (1 MiB).
	maxCancelBytes = 256
	// flushWait bounds NewHost's wait for the NATS server to take its
	// subscriptions (nats.go's Flush bound).
	flushWait = 10 * time.Second
)

// Why a host ended a call or a subscription (errors.Is on the caller's
// side sees them only as text: they travel as JSON-RPC error messages).
var (
	errCallerCancelled = errors.New("the caller cancelled the call")
	errCallerGone      = errors.New("the caller stopped sending keep-alives")
	errDraining        = errors.New("the host is draining")
	errHostClosed      = errors.New("the host closed")
)

// Serve makes the host serve pool under name. The host owns the pool
// from then on: it closes it when it stops. name becomes a NATS subject
// token and the micro service's name: letters, digits, '-' and '_'.
// Hosts.
func Serve(name string, pool *supervisor.Pool) HostOption {
	return hostOption(func(c *config) error {
		if pool != nil {
			c.given = append(c.given, pool)
		}
		if err := natsname.Check("server name", name); err != nil {
			return err
		}
		if pool == nil {
			return fmt.Errorf("remote: Serve(%q): nil pool", name)
		}
		if _, dup := c.pools[name]; dup {
			return fmt.Errorf("remote: Serve(%q): served twice", name)
		}
		if c.pools == nil {
			c.pools = map[string]*supervisor.Pool{}
		}
		c.pools[name] = pool
		c.order = append(c.order, name)
		return nil
	})
}

// WithMaxHeld bounds the calls and subscriptions held at once (default
// 1024). A call over the bound is refused before it runs, and
// the caller sends it to another host. Hosts.
func WithMaxHeld(n int) HostOption {
	return hostOption(func(c *config) error {
		if n < 1 {
			return fmt.Errorf("remote: WithMaxHeld(%d): must be at least 1", n)
		}
		c.maxHeld = n
		return nil
	})
}

// WithHostLabel names the host in service metadata (`snodo servers`
// shows it). Default: hostname:pid. Hosts.
func WithHostLabel(label string) HostOption {
	return hostOption(func(c *config) error { c.label = label; return nil })
}

// Host serves named pools over NATS: each name is a NATS micro service
// (so `nats micro ls`, `ping`, `info` and `stats` show it) with a call
// and a listen endpoint under PREFIX.NAME, in a queue group shared by
// every host of that name. Calls and subscriptions run on the pool; the
// JSON-RPC bytes travel unchanged, heartbeats tell callers the host is
// alive. A host never runs a command that came over the wire: it serves
// only the pools it was given.
type Host struct {
	id     string
	label  string
	cfg    config
	serve  *nats.Conn // the service endpoints, and most results (publishResult): drained first at shutdown
	reply  *nats.Conn // replies, heartbeats, events, cancels, keep-alives
	served []*served
	ctl    *nats.Subscription

	callsEnd    error           // why the calls were stopped (stopCalls: Close, or an expired drain); nil before; guarded by mu
	subCtx      context.Context // subscriptions; cancelled when the drain starts
	stopSubs    context.CancelCauseFunc
	serveDone   chan struct{} // closed when the serving connection has closed
	replyDone   chan struct{} // closed when the reply connection has closed
	unwatch     func() bool
	slots       chan struct{} // one per held call or subscription
	held        sync.WaitGroup
	work        chan job       // admitted jobs, to an idle worker (unbuffered)
	workers     sync.WaitGroup // the workers
	stopWorkers chan struct{}  // closed once the jobs are done: the idle workers end
	subsHeld    sync.WaitGroup
	stopOnce    sync.Once
	stopped     chan struct{} // closed when Shutdown's work is done
	done        chan struct{} // closed when the pools' servers have been reaped too
	stopErr     error
	mu          sync.Mutex
	calls       map[string]*heldCall // by reply subject; at most maxHeld (a call takes a slot first); beatCalls walks it
	cancelled   map[string]struct{}  // cancels that came before their call; at most maxCancelled, the older half forgotten past it
	cancelList  []string
	subs        map[string]*hostSub
	draining    bool
	lost        error          // why the host stopped on its own (its NATS connection closed for good)
	unwatch2    []func()       // stop the NATS state watches
	healthStop  chan struct{}  // closed when the drain starts: the health watches end
	healthWG    sync.WaitGroup // the health watches
	out         outbox[outMsg] // results on their way to NATS (publishResult)
	beatTimer   *time.Timer    // the held calls' heartbeats (beatCalls); nil until the first call; guarded by mu
	beatAt      int64          // when beatTimer fires, unix nanoseconds; 0: not armed; guarded by mu
	beatsOff    bool           // the calls are over (Shutdown): no more heartbeats; guarded by mu
}

// served is one name served by the host.
type served struct {
	name                              string
	run                               func(reply string, hdr nats.Header, data []byte) // runs one call (runCall), made once
	pool                              *supervisor.Pool
	subj                              subjects
	svc                               *service // nil while withdrawn (its pool cannot serve); guarded by the host's mu once serving
	size0                             int      // the pool's size when the host began
	cancelSub                         *nats.Subscription
	inFlight                          atomic.Int64
	subsIn                            atomic.Int64 // subscriptions held
	callStats, infoStats, listenStats endpointStats
	cancels                           atomic.Int64
	eraKnown                          atomic.Pointer[snodo.Era]   // the pool's era once known (poolEra)
	tasks                             taskTable[*snodo.Client]    // the tasks it created, by id: the member holding each
	recentOpts                        [8]atomic.Pointer[optsRead] // Snodo-Opts values read lately, by hash (optsOf)
	taskExt                           atomic.Int32                // taskExtUnknown, No or Yes
	leg                               *legacySide                 // ServeLegacy's; nil without
}

// NewHost connects to the NATS server at url and serves the pools given
// with Serve. ctx is the host's owner: when it is done, the host drains
// (as Shutdown, bounded by 30 s); one already done is an
// error, and one done while NewHost connects ends the connecting: NewHost
// returns its error (errors.Is context.Canceled or DeadlineExceeded).
// The host owns the pools: they close when it stops, and if NewHost
// fails.
func NewHost(ctx context.Context, url string, opts ...HostOption) (*Host, error) {
	cfg, optErr := hostConfig(opts)
	closePools := func() {
		for _, p := range cfg.given {
			_ = p.Close()
		}
	}
	switch {
	case optErr != nil:
	case ctx == nil:
		optErr = errors.New("remote: NewHost: nil context.Context; pass context.Background() or the ctx that owns the host")
	case ctx.Err() != nil:
		optErr = fmt.Errorf("remote: NewHost: its owner ctx is already done: %w", context.Cause(ctx))
	}
	if optErr != nil {
		closePools()
		return nil, optErr
	}
	if len(cfg.pools) == 0 {
		return nil, errors.New("remote: NewHost: nothing to serve; pass Serve(name, pool) at least once")
	}
	for name := range cfg.legacy {
		if _, ok := cfg.pools[name]; !ok {
			closePools()
			return nil, fmt.Errorf("remote: NewHost: ServeLegacy(%q) without Serve(%q); serve the name's pool too", name, name)
		}
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	h := &Host{
		id: nuid.Next(), cfg: cfg, label: cfg.label,
		serveDone:   make(chan struct{}),
		replyDone:   make(chan struct{}),
		slots:       make(chan struct{}, cfg.maxHeld),
		stopped:     make(chan struct{}),
		done:        make(chan struct{}),
		calls:       map[string]*heldCall{},
		cancelled:   map[string]struct{}{},
		subs:        map[string]*hostSub{},
		healthStop:  make(chan struct{}),
		work:        make(chan job),
		stopWorkers: make(chan struct{}),
	}
	if h.label == "" {
		hn, _ := os.Hostname()
		h.label = hn + ":" + strconv.Itoa(os.Getpid())
	}
	h.subCtx, h.stopSubs = context.WithCancelCause(context.Background())
	if err := h.connect(ctx, url); err != nil {
		h.stopSubs(err)
		closePools()
		return nil, err
	}
	for _, s := range h.served {
		h.healthWG.Add(1)
		go h.watchHealth(s)
	}
	h.unwatch = context.AfterFunc(ctx, func() {
		dctx, cancel := context.WithTimeout(context.Background(), defaultDrainTimeout)
		defer cancel()
		_ = h.Shutdown(dctx)
	})
	// Last, once the host is whole: a connection closed for good stops it.
	h.mu.Lock()
	h.unwatch2 = []func(){
		watchConn(h.serve, h.cfg.logger, "host "+h.label+" (serve)", h.connLost),
		watchConn(h.reply, h.cfg.logger, "host "+h.label, h.connLost),
	}
	h.mu.Unlock()
	if h.serve.IsClosed() || h.reply.IsClosed() { // it closed before the watches began
		h.connLost(nil)
	}
	return h, nil
}

// connect opens both connections, the control subscription and one
// service per name, bounded by ctx (NewHost's). On error everything
// opened is closed.
func (h *Host) connect(ctx context.Context, url string) (err error) {
	closed := make(chan struct{})
	serveOpts := h.cfg.natsOptions(
		nats.Name("snodo host "+h.label+" (serve)"),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	h.serve, err = connectNATS(ctx, url, serveOpts)
	if err != nil {
		return err
	}
	go func() { <-closed; close(h.serveDone) }()
	replyClosed := make(chan struct{})
	h.reply, err = connectNATS(ctx, url, h.cfg.natsOptions(
		nats.Name("snodo host "+h.label),
		nats.ClosedHandler(func(*nats.Conn) { close(replyClosed) })))
	if err != nil {
		h.serve.Close()
		return err
	}
	go func() { <-replyClosed; close(h.replyDone) }()
	defer func() {
		if err != nil {
			for _, s := range h.served {
				if s.svc != nil {
					_ = s.svc.Stop()
				}
			}
			h.serve.Close()
			h.reply.Close()
		}
	}()
	h.ctl, err = h.reply.Subscribe(controlSubject(h.cfg.prefix, h.id), h.onControl)
	if err != nil {
		return fmt.Errorf("remote: subscribing to the control subject: %w", err)
	}
	for _, name := range h.cfg.order {
		s := &served{name: name, pool: h.cfg.pools[name], subj: subjectsOf(h.cfg.prefix, name)}
		s.size0 = len(s.pool.Members())
		if start := h.cfg.legacy[name]; start != nil {
			s.leg = newLegacySide(h, s, start)
		}
		s.run = func(reply string, hdr nats.Header, data []byte) { h.runCall(s, reply, hdr, data) }
		h.served = append(h.served, s)
		if s.cancelSub, err = h.reply.Subscribe(s.subj.cancel, func(m *nats.Msg) { h.cancelCall(string(m.Data), s) }); err != nil {
			return fmt.Errorf("remote: subscribing to %s: %w", s.subj.cancel, err)
		}
		if err = h.addService(s); err != nil {
			return err
		}
	}
	// Make sure the server has every subscription before callers are told
	// the host is up; ctx bounds that wait too, as does nats.go's own
	// Flush bound when ctx has none.
	fctx, cancel := context.WithTimeout(ctx, flushWait)
	defer cancel()
	if err = flushDenied(fctx, h.serve); err == nil {
		err = flushDenied(fctx, h.reply)
	}
	if _, _, ok := denied(err); ok {
		return permissionError("remote: NewHost: cannot serve "+strings.Join(h.cfg.order, ", "), err)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctxErr(ctx)
		}
		return fmt.Errorf("remote: NewHost: flushing its subscriptions to NATS: %w", err)
	}
	return nil
}

// Service metadata keys (micro Info and Ping show them).
const (
	metaServer = "snodo.server" // the served name
	metaHost   = "snodo.host"   // the host's id
	metaLabel  = "snodo.label"  // the host's label (hostname:pid by default)
	metaPrefix = "snodo.prefix" // the subject prefix

	serviceVersion = "0.1.0"
)

// poolEra is the pool's era, cached once known: Pool.Era copies the
// pool's members to read it, an allocation per call where a tools/call
// asks it (mayCreateTask).
func (s *served) poolEra() snodo.Era {
	if e := s.eraKnown.Load(); e != nil {
		return *e
	}
	e := s.pool.Era()
	var unknown snodo.Era
	if e != unknown {
		s.eraKnown.Store(&e)
	}
	return e
}

// era is the pool's era as sent in replies ("" until known).
func (s *served) era() string { return string(s.poolEra()) }

// connLost stops the host once one of its NATS connections closed for
// good (not by Shutdown): it serves nothing any more, so its pools are
// closed, and Err and Done tell its program.
func (h *Host) connLost(err error) {
	h.mu.Lock()
	if h.draining || h.lost != nil {
		h.mu.Unlock()
		return
	}
	switch {
	case err == nil:
		err = nats.ErrConnectionClosed
	case !errors.Is(err, nats.ErrConnectionClosed):
		err = fmt.Errorf("%w: %w", nats.ErrConnectionClosed, err)
	}
	h.lost = fmt.Errorf("remote: the NATS connection closed for good: host %s serves nothing now (%w); start it again, or raise WithReconnect's Attempts", h.label, err)
	h.mu.Unlock()
	go h.Close()
}

// stopWatching ends the NATS state watches.
func (h *Host) stopWatching() {
	h.mu.Lock()
	stops := h.unwatch2
	h.unwatch2 = nil
	h.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// Err is why the host stopped on its own: nil while it serves and after
// a Shutdown or Close; an error wrapping nats.ErrConnectionClosed once its NATS
// connection closed for good (see Reconnect), after which the host stops
// as Close does and Done is closed once its servers have been reaped.
func (h *Host) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// ID is the host's id, unique per process run; callers see it in
// service metadata.
func (h *Host) ID() string { return h.id }

// Done is closed once the host has stopped and every server of its
// pools has been reaped (each pool's Done): wait for it before the
// program exits, so that no server outlives it.
func (h *Host) Done() <-chan struct{} { return h.done }

// Shutdown drains the host: it takes no new calls or subscriptions
// (other hosts of the same names take them at once), ends its
// subscriptions (their callers see why), waits for the calls it holds to
// finish, then closes its pools and its NATS connections. When ctx is
// done first, the calls still running are cancelled on their servers
// and fail with -32000. Shutdown returns once all of that is done;
// calling it again waits for the first. As with supervisor.Pool.Close,
// the servers are reaped in the background: Done tells when.
func (h *Host) Shutdown(ctx context.Context) error {
	if ctx == nil {
		return errors.New("remote: Host.Shutdown: nil context.Context; pass one that bounds the drain (Close stops at once)")
	}
	h.stopOnce.Do(func() { h.stopErr = h.shutdown(ctx) })
	<-h.stopped
	return h.stopErr
}

// Close stops the host at once: running calls are cancelled and fail
// with -32000. It returns once the host has stopped, as Shutdown does
// (Done tells when the servers have been reaped). Idempotent; it
// returns nil.
func (h *Host) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.Shutdown(ctx) // its only error is the drain it cuts short on purpose
	return nil
}

func (h *Host) shutdown(ctx context.Context) error {
	defer close(h.stopped)
	h.unwatch()
	h.mu.Lock()
	h.draining = true
	for _, s := range h.served {
		if s.svc != nil {
			_ = s.svc.Stop() // no new calls reach this host
		}
	}
	h.mu.Unlock()
	close(h.healthStop)
	h.healthWG.Wait()
	h.stopWatching()
	// Calls the server delivered before it saw the unsubscribes are still
	// dispatched; the connection closes once they all have been.
	if err := h.serve.Drain(); err != nil {
		h.serve.Close()
	}
	select {
	case <-h.serveDone:
	case <-ctx.Done():
		h.serve.Close()
		<-h.serveDone
	}
	h.stopSubs(errDraining)
	h.subsHeld.Wait()
	waited := make(chan struct{})
	go func() { h.held.Wait(); close(waited) }()
	var err error
	select {
	case <-waited:
	case <-ctx.Done():
		// A call releases its slot as it ends: with none taken there is
		// no drain to cut short, whatever ctx says.
		if len(h.slots) > 0 {
			err = fmt.Errorf("remote: drain cut short: %w", ctx.Err())
			h.stopCalls(errHostClosed)
		}
		<-waited
	}
	h.stopBeats()        // every call is over
	close(h.stopWorkers) // every job is done: the idle workers end
	h.workers.Wait()
	h.stopCalls(errHostClosed)
	var legDone []<-chan struct{}
	for _, s := range h.served {
		_ = s.pool.Close()
		if s.leg != nil {
			if d := s.leg.close(); d != nil {
				legDone = append(legDone, d)
			}
		}
	}
	go func() {
		for _, s := range h.served {
			<-s.pool.Done()
		}
		for _, d := range legDone {
			<-d
		}
		close(h.done)
	}()
	// The last replies and ends are flushed before the connection closes.
	if h.reply.Drain() != nil {
		h.reply.Close()
	}
	select {
	case <-h.replyDone:
	case <-ctx.Done():
		h.reply.Close()
		<-h.replyDone
	}
	return err
}

// take reserves a slot for a call or subscription, or reports false at
// the bound.
func (h *Host) take() bool {
	select {
	case h.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (h *Host) release() { <-h.slots }

// publish sends m on the reply connection; a failure (connection closed)
// is logged: the caller's heartbeat watch covers it.
func (h *Host) publish(m *nats.Msg) {
	if err := h.reply.PublishMsg(m); err != nil {
		h.cfg.logger.Debug("remote: publish failed", "subject", m.Subject, "error", err)
	}
}

// onCall takes one call from the service endpoint.
func (h *Host) onCall(s *served, r *nats.Msg) {
	h.admit(r, &h.held, &s.callStats, s.run)
}

// admit is the one way in for calls and subscriptions. It runs on the
// endpoint's delivery goroutine, so it only reserves a slot (refusing at
// the bound) and hands r off to run on a goroutine counted in wg.
func (h *Host) admit(r *nats.Msg, wg *sync.WaitGroup, st *endpointStats, run func(reply string, hdr nats.Header, data []byte)) {
	t0 := time.Now()
	reply := r.Reply
	if reply == "" {
		return // nobody to answer: it must be a request
	}
	hdr, data := r.Header, r.Data // hdr nil for a call with no header: read only, as a nil map reads
	if !h.take() {
		h.refuse(st, reply, data, fmt.Sprintf("host %s holds %d calls (its bound)", h.label, h.cfg.maxHeld))
		st.record(time.Since(t0))
		return
	}
	wg.Add(1)
	j := job{wg: wg, st: st, run: run, reply: reply, hdr: hdr, data: data, t0: t0}
	select {
	case h.work <- j: // an idle worker takes it
	default:
		h.workers.Add(1)
		go h.worker(j)
	}
}

// job is one call or subscription admitted, for a worker to run.
type job struct {
	wg    *sync.WaitGroup
	st    *endpointStats
	run   func(reply string, hdr nats.Header, data []byte)
	reply string
	hdr   nats.Header
	data  []byte
	t0    time.Time
}

// workerIdle is how long a worker waits for its next job before it
// ends.
const workerIdle = 10 * time.Second

// worker runs j, then the jobs admit hands it while it waits, until it
// has run none for a whole workerIdle (it ends between one and two
// workerIdle after its last) or the host stops. Reusing workers spares
// each call a goroutine of its own, and the growth of that goroutine's
// stack as deep as a pool call goes. Its idle timer is not reset per
// job: it ticks every workerIdle, and the worker ends on a tick that
// finds it ran nothing since the one before.
func (h *Host) worker(j job) {
	defer h.workers.Done()
	idle := time.NewTicker(workerIdle)
	defer idle.Stop()
	for {
		h.runJob(j)
		for ran, next := true, false; !next; {
			select {
			case j = <-h.work:
				next = true
			case <-idle.C:
				if !ran {
					return
				}
				ran = false
			case <-h.stopWorkers:
				return
			}
		}
	}
}

func (h *Host) runJob(j job) {
	defer j.wg.Done()
	defer h.release()
	j.run(j.reply, j.hdr, j.data)
	j.st.record(time.Since(j.t0)) // the whole call, not the hand-off
}

// refuse answers a call that never ran: the caller may send it again.
func (h *Host) refuse(st *endpointStats, reply string, data []byte, why string) {
	st.fail(why)
	env, _ := jsonrpc.Scan(data)
	m := nats.NewMsg(reply)
	m.Header.Set(hdrNotRun, why)
	m.Header.Set(hdrLocal, "1")
	m.Header.Set(hdrHost, h.id)
	m.Data = trimNL(jsonrpc.AppendError(nil, env.ID, &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: why}))
	h.publish(m)
}

func (h *Host) runCall(s *served, reply string, hdr nats.Header, data []byte) {
	env, err := jsonrpc.Scan(data)
	opts, ro := s.optsOf(hdr, data)
	if err != nil || env.Kind != jsonrpc.KindRequest || len(env.ID) == 0 {
		h.answer(s, reply, env.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "remote: the payload is not a JSON-RPC request"}, true)
		return
	}
	if !utf8.Valid(data) {
		// JSON text is UTF-8: a strict server's reader fails on the line,
		// and may fail the connection of every other caller with it.
		h.answer(s, reply, env.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "remote: the payload is not valid UTF-8 (JSON text must be); nothing was sent to the server"}, true)
		return
	}
	method := methodName(&env)
	if why := refusedMethod(method); why != "" {
		h.answer(s, reply, env.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("remote: host %s refuses %s: %s", h.label, method, why)}, true)
		return
	}
	if ok, why := canServe(s); !ok {
		// Withdrawn, or about to be: a call NATS delivered meanwhile goes
		// to another host.
		h.refuse(&s.callStats, reply, data, fmt.Sprintf("host %s cannot serve %s now (%v)", h.label, s.name, why))
		return
	}
	// A call's ctx is no child of a host-wide one: deriving it would take
	// that ctx's lock and add it to (then remove it from) its children on
	// every call, which all the workers share. stopCalls cancels the held
	// calls instead, and hold a call that comes after (callsEnd).
	ctx := context.Background()
	if len(hdr) > 1 || len(hdr) == 1 && hdr.Get(hdrOpts) == "" { // more than the call's settings: trace context, maybe
		ctx = extractTrace(ctx, hdr)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hc := &heldCall{cancel: cancel, alive: opts.alive, reply: reply, beat: beatWithin(opts.beat)}
	hc.lastSeen.Store(time.Now().UnixNano())
	switch h.hold(reply, hc) {
	case heldCancelled:
		s.cancels.Add(1)
		return // cancelled before it arrived: the caller has gone
	case heldTwice:
		// Another call answers on this reply subject: a caller of this
		// package never sends two, so it came from a peer replying to
		// someone else's inbox. Answering it would hand that caller a
		// result it did not ask for, and holding it would lose the first
		// call's cancel.
		h.cfg.logger.Warn("remote: dropped a call whose reply subject another call holds", "server", s.name, "reply", reply)
		return
	}
	defer h.unhold(reply)
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)

	// While it runs (held) the host sends it a heartbeat every beat
	// (beatCalls); a caller that answers each with a keep-alive (alive)
	// and then stops for 3.5 beats has died or is cut off, and nobody
	// waits for this call any more.

	if opts.progress {
		ro = append(ro[:len(ro):len(ro)], snodo.OnProgress(func(p snodo.Progress) { // a copy: ro may be shared
			m := nats.NewMsg(reply)
			m.Header.Set(hdrKind, kindProgress)
			m.Data, _ = json.Marshal(wireProgress{p.Progress, p.Total, p.Message})
			h.publish(m)
		}))
	}
	if env.Params != nil {
		hc.params = json.RawMessage(withoutProgressToken(env.Params))
	}
	var raw json.RawMessage
	var created bool
	legacy := opts.legacy && s.leg != nil
	if legacy {
		raw, created, err = s.leg.request(ctx, hc, method, opts, ro)
	} else {
		raw, created, err = h.request(ctx, s, method, &hc.params, ro)
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && (errors.Is(cause, errCallerCancelled) || errors.Is(cause, errCallerGone)) {
			s.cancels.Add(1)
			if errors.Is(cause, errCallerGone) {
				h.cfg.logger.Info("remote: call cancelled: its caller stopped sending keep-alives", "server", s.name, "method", method)
			}
			return // the caller has stopped waiting
		}
		if errors.Is(err, pin.ErrLost) { // the session's pinned server is gone (pin.go)
			h.answerPinLost(s, reply, env.ID, err)
			return
		}
		if notRunError(s, err) {
			h.refuse(&s.callStats, reply, data, fmt.Sprintf("host %s: %v", h.label, err))
			return
		}
		e, local := rpcError(err)
		h.answer(s, reply, env.ID, nil, e, local)
		return
	}
	if created || opts.pinNew { // a new pin's holder too (pin.go)
		h.answer(s, reply, env.ID, raw, nil, false) // with Snodo-Host: where the task's (or pin's) later calls go
		return
	}
	// A legacy call's relayed requests and logs left on the reply
	// connection: its result follows them there.
	h.answerResult(s, reply, env.ID, raw, opts.era, !opts.progress && !legacy)
}

// optsRead is one Snodo-Opts value read (callOptsOf), with the request
// options it makes for the pool call.
type optsRead struct {
	value string
	opts  callOpts
	ro    []snodo.RequestOption // shared: never appended to in place
}

// maxOptsKept bounds a Snodo-Opts value optsOf keeps (a caller of this
// package sends about 40 bytes).
const maxOptsKept = 256

// optsSeed hashes Snodo-Opts values for served.recentOpts.
var optsSeed = maphash.MakeSeed()

// optsOf reads a call's settings from its headers (callOptsOf), or from
// its payload when it came with no hdrOpts (envOptsOf), and makes
// the request options of its pool call: the caller's own timers fire
// first and send the cancel; the host's, a grace later, are a backstop
// for a cancel that never arrives. A caller sends the same Snodo-Opts
// value with every call of the same settings, so the last few values
// read are kept with their options, and most calls read none and make
// none: eight slots, chosen by the value's hash, each holding the last
// value read that fell in it (a value over maxOptsKept bytes is read
// every time, never kept). The progress option, which names the call,
// is not among them.
func (s *served) optsOf(hdr nats.Header, data []byte) (callOpts, []snodo.RequestOption) {
	v := hdr.Get(hdrOpts)
	var inPayload []byte
	if v == "" {
		inPayload, _ = envOptsOf(data)
	}
	var slot *atomic.Pointer[optsRead]
	switch {
	case v != "" && len(v) <= maxOptsKept:
		slot = &s.recentOpts[maphash.String(optsSeed, v)%uint64(len(s.recentOpts))]
		if r := slot.Load(); r != nil && r.value == v {
			return r.opts, r.ro
		}
	case inPayload != nil && len(inPayload) <= maxOptsKept:
		slot = &s.recentOpts[maphash.Bytes(optsSeed, inPayload)%uint64(len(s.recentOpts))]
		if r := slot.Load(); r != nil && r.value == string(inPayload) {
			return r.opts, r.ro
		}
	}
	var opts callOpts
	if inPayload != nil {
		v = string(inPayload)
		opts = parseOpts(v)
	} else {
		opts = callOptsOf(hdr)
	}
	var ro []snodo.RequestOption
	if opts.timeout > 0 {
		ro = append(ro, snodo.Timeout(plusGrace(opts.timeout)))
	}
	if opts.reset {
		ro = append(ro, snodo.ResetTimeoutOnProgress())
	}
	if opts.total > 0 {
		ro = append(ro, snodo.MaxTotalTimeout(plusGrace(opts.total)))
	}
	if slot != nil {
		slot.Store(&optsRead{value: v, opts: opts, ro: ro})
	}
	return opts, ro
}

// wireProgress is a progress update on the wire.
type wireProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// answer publishes the final reply of a call.
func (h *Host) answer(s *served, reply string, id, result []byte, e *jsonrpc.Error, local bool) {
	m := nats.NewMsg(reply)
	m.Header.Set(hdrHost, h.id)
	if era := s.era(); era != "" {
		m.Header.Set(hdrEra, era)
	}
	if e != nil {
		s.callStats.fail(e.Message)
		if local {
			m.Header.Set(hdrLocal, "1")
		}
		m.Data = trimNL(jsonrpc.AppendError(nil, id, e))
	} else {
		m.Data = trimNL(jsonrpc.AppendResult(nil, id, result))
	}
	if max := h.reply.MaxPayload(); int64(len(m.Data)) > max-1024 {
		why := fmt.Sprintf("host %s: the answer is %d bytes, more than the NATS server's max_payload (%d); raise max_payload", h.label, len(m.Data), max)
		s.callStats.fail(why)
		m.Header.Set(hdrLocal, "1")
		m.Data = trimNL(jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: why}))
	}
	h.publish(m)
}

// answerResult publishes a call's result: the JSON-RPC response and no
// header, but Snodo-Era when the caller asked for it (withEra). Its bytes
// are built in a reused buffer: nats.go copies them when publishing.
// onServe lets it leave on the serving connection (publishResult): a call
// that asked for progress has its updates on the reply connection, and
// NATS keeps order only within one connection, so its result follows them
// there.
func (h *Host) answerResult(s *served, reply string, id, result []byte, withEra, onServe bool) {
	era := ""
	if withEra {
		era = s.era()
	}
	bp := replyBufs.Get().(*[]byte)
	*bp = trimNL(jsonrpc.AppendResult((*bp)[:0], id, result))
	if era == "" && int64(len(*bp)) <= h.reply.MaxPayload()-1024 {
		h.out.send(outMsg{reply, bp, onServe}, h.publishResult) // returns bp to replyBufs
		return
	}
	putReplyBuf(bp)
	h.answer(s, reply, id, result, nil, false)
}

// outMsg is one result: its subject and its bytes, in a replyBufs buffer
// that goes back to the pool once published, and whether it may leave
// on the serving connection.
type outMsg struct {
	subject string
	data    *[]byte
	onServe bool
}

// publishResult publishes a result built by answerResult (nats.go copies
// it) and gives its buffer back to replyBufs. A result allowed to
// (onServe) leaves on the serving connection, the one its call came in
// on, while that is connected and not draining: at 1 in flight a result
// so sent reached its caller 5–7 µs sooner than on the reply connection,
// whose goroutines and socket sat idle since the call before. Otherwise,
// or when that publish fails (the connection closed meanwhile), it leaves
// on the reply connection, which outlives the serving one at shutdown.
// A drain flushes what was published on the serving connection before.
func (h *Host) publishResult(m outMsg) {
	defer putReplyBuf(m.data)
	if m.onServe && h.serve.Status() == nats.CONNECTED && h.serve.Publish(m.subject, *m.data) == nil {
		return
	}
	if err := h.reply.Publish(m.subject, *m.data); err != nil {
		h.cfg.logger.Debug("remote: publish failed", "subject", m.subject, "error", err)
	}
}

// replyBufs are the buffers answerResult builds replies in.
var replyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledReply bounds the buffer replyBufs keeps.
const maxPooledReply = 64 << 10

// putReplyBuf returns a buffer to replyBufs, unless it grew too large.
func putReplyBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledReply {
		replyBufs.Put(bp)
	}
}

// methodName is env's method, without a copy for the methods most calls
// use.
func methodName(env *jsonrpc.Envelope) string {
	switch string(env.Method) {
	case `"tools/call"`:
		return "tools/call"
	case `"tools/list"`:
		return "tools/list"
	case `"resources/read"`:
		return "resources/read"
	case `"resources/list"`:
		return "resources/list"
	case `"prompts/get"`:
		return "prompts/get"
	case `"prompts/list"`:
		return "prompts/list"
	case `"ping"`:
		return "ping"
	}
	return env.MethodName()
}

// rpcError turns a call's error into the JSON-RPC error sent back, and
// says whether the host (not the MCP server) raised it.
func rpcError(err error) (*jsonrpc.Error, bool) {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: e.Data}, e.Local()
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: err.Error()}, true
}

// plusGrace is a caller's timeout t with the host's grace added, the
// longest time.Duration when the sum would not fit (it would wrap around
// to a negative, which means no timeout at all).
func plusGrace(t time.Duration) time.Duration {
	if t > math.MaxInt64-timeoutGrace {
		return math.MaxInt64
	}
	return t + timeoutGrace
}

// beatOf is the heartbeat interval the caller asked for, within bounds.
func beatOf(hdr nats.Header) time.Duration { return beatWithin(headerMillis(hdr, hdrBeat)) }

// beatWithin is the heartbeat interval d (0: the default) within bounds.
func beatWithin(d time.Duration) time.Duration {
	if d == 0 {
		return defaultHeartbeat
	}
	return min(max(d, 20*time.Millisecond), time.Minute)
}

// beatSubscription sends a heartbeat to subject (a subscription's events)
// every d until the returned stop is called. It runs on a timer, not a
// goroutine of its own. A beat racing with stop may still go out;
// subscribers ignore beats of subscriptions they no longer hold. Beats
// carry the host's id: a subscriber sends its keep-alives to the host's
// control subject. (The calls' heartbeats share one timer: beatCalls.)
func (h *Host) beatSubscription(subject string, d time.Duration) (stop func()) {
	var stopped atomic.Bool
	var t *time.Timer
	var mu sync.Mutex // t is set before the first beat reads it
	mu.Lock()
	t = time.AfterFunc(d, func() {
		if stopped.Load() {
			return
		}
		m := nats.NewMsg(subject)
		m.Header.Set(hdrKind, kindBeat)
		m.Header.Set(hdrHost, h.id)
		h.publish(m)
		mu.Lock()
		t.Reset(d)
		mu.Unlock()
	})
	mu.Unlock()
	return func() {
		stopped.Store(true)
		mu.Lock()
		t.Stop()
		mu.Unlock()
	}
}

// What hold did with a call.
const (
	heldOK        = iota
	heldCancelled // its cancel came first
	heldTwice     // another running call holds its reply subject
)

// heldCall is a running call.
type heldCall struct {
	cancel   context.CancelCauseFunc
	alive    bool         // its caller sends keep-alives (Snodo-Alive)
	lastSeen atomic.Int64 // unix nanoseconds of the last one (of its start before the first)
	unheard  atomic.Int32 // heartbeats sent since that keep-alive
	reply    string
	beat     time.Duration
	next     int64           // unix nanoseconds of its next heartbeat; guarded by the host's mu
	params   json.RawMessage // its params, for the pool call (passed by pointer: no allocation)
	ctx      context.Context // a legacy call's (hostlegacy.go): its relayed requests end with it
	level    int             // a legacy call's caller's logging level (logRank); -1: no logs
}

// beatCalls sends the held calls the heartbeats that are due, then sets
// the host's one heartbeat timer for the next. The calls' heartbeats
// share that timer (armBeats), rather than each call starting and
// stopping a timer of its own: most calls end before their first beat.
// A call whose beat is due within a quarter beat gets it now, early,
// so that the timer fires a few times per beat however many calls are
// held, each time going through them all (at most the host's bound).
func (h *Host) beatCalls() {
	now := time.Now().UnixNano()
	var due []*heldCall
	h.mu.Lock()
	h.beatAt = 0
	next := int64(math.MaxInt64)
	for _, hc := range h.calls {
		if hc.next-int64(hc.beat/4) <= now {
			hc.next = now + int64(hc.beat)
			due = append(due, hc)
		}
		next = min(next, hc.next)
	}
	if next != math.MaxInt64 {
		h.armBeats(next)
	}
	h.mu.Unlock()
	for _, hc := range due {
		h.beat(hc)
	}
}

// armBeats makes the heartbeat timer fire at at (unix nanoseconds) at the
// latest. h.mu is held.
func (h *Host) armBeats(at int64) {
	if h.beatsOff || h.beatAt != 0 && h.beatAt <= at {
		return
	}
	h.beatAt = at
	d := time.Duration(at - time.Now().UnixNano())
	if h.beatTimer == nil {
		h.beatTimer = time.AfterFunc(d, h.beatCalls)
		return
	}
	h.beatTimer.Reset(d)
}

// stopBeats stops the heartbeat timer for good, once the calls are over.
func (h *Host) stopBeats() {
	h.mu.Lock()
	h.beatsOff = true
	if h.beatTimer != nil {
		h.beatTimer.Stop()
	}
	h.mu.Unlock()
}

// beat sends hc one heartbeat, or cancels it when its caller has sent no
// keep-alive for 3.5 beats and has left the last 3 beats unanswered: a
// host that was itself late (a starved machine, its beats held up) does
// not blame its callers for answering nothing it had not sent. A beat racing with the call's end may still
// go out: callers ignore beats of calls they no longer wait for. Beats
// carry the host's id: the caller sends its keep-alives to the host's
// control subject.
func (h *Host) beat(hc *heldCall) {
	if hc.alive && hc.unheard.Load() >= missedBeats && time.Since(time.Unix(0, hc.lastSeen.Load())) > time.Duration(missedBeats)*hc.beat+hc.beat/2 {
		hc.cancel(errCallerGone)
		return
	}
	hc.unheard.Add(1)
	m := nats.NewMsg(hc.reply)
	m.Header.Set(hdrKind, kindBeat)
	m.Header.Set(hdrHost, h.id)
	h.publish(m)
}

// hold registers a running call under its reply subject. A call held
// once the calls were stopped (stopCalls) is cancelled at once, with
// stopCalls' cause.
func (h *Host) hold(reply string, hc *heldCall) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, gone := h.cancelled[reply]; gone {
		delete(h.cancelled, reply)
		return heldCancelled
	}
	if _, dup := h.calls[reply]; dup {
		return heldTwice
	}
	h.calls[reply] = hc
	hc.next = hc.lastSeen.Load() + int64(hc.beat)
	h.armBeats(hc.next)
	if h.callsEnd != nil {
		hc.cancel(h.callsEnd)
	}
	return heldOK
}

// stopCalls cancels every call the host holds, and every call held
// after it (hold), with why as their cause: their servers are told, and
// each call fails with -32000.
func (h *Host) stopCalls(why error) {
	h.mu.Lock()
	if h.callsEnd == nil {
		h.callsEnd = why
	}
	held := make([]*heldCall, 0, len(h.calls))
	for _, hc := range h.calls {
		held = append(held, hc)
	}
	h.mu.Unlock()
	for _, hc := range held {
		hc.cancel(why)
	}
}

func (h *Host) unhold(reply string) {
	h.mu.Lock()
	delete(h.calls, reply)
	h.mu.Unlock()
}

// cancelCall cancels the call answering on reply, or remembers the cancel
// for a call not yet seen (bounded).
func (h *Host) cancelCall(reply string, s *served) {
	if len(reply) > maxCancelBytes {
		h.cfg.logger.Debug("remote: a cancel longer than any reply subject was dropped", "server", s.name, "bytes", len(reply))
		return
	}
	h.mu.Lock()
	hc := h.calls[reply]
	if hc == nil && !h.draining {
		if len(h.cancelList) >= maxCancelled {
			for _, k := range h.cancelList[:maxCancelled/2] {
				delete(h.cancelled, k)
			}
			h.cancelList = append(h.cancelList[:0], h.cancelList[maxCancelled/2:]...)
		}
		h.cancelled[reply] = struct{}{}
		h.cancelList = append(h.cancelList, reply)
	}
	h.mu.Unlock()
	if hc != nil {
		h.cfg.logger.Debug("remote: call cancelled by its caller", "server", s.name, "reply", reply)
		hc.cancel(errCallerCancelled)
	}
}

func trimNL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}
