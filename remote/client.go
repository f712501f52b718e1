package remote

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/dispatch"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/natsname"
	"github.com/snodo/snodo/internal/telemetry"
)

// Errors of remote calls, for errors.Is. Both come as -32000 *snodo.Error
// values that also match snodo.ErrConnectionClosed. Besides them, a call
// wraps snodo.ErrClosed after Close (as on every snodo.Session),
// nats.ErrConnectionReconnecting when it was not sent because the
// client's NATS connection is down and reconnecting (it never runs
// later), and nats.ErrConnectionClosed when that connection closed for
// good.
var (
	// ErrNoHost: no host serves the name (no responders on its subject).
	ErrNoHost = errors.New("remote: no host serves this name")
	// ErrHostGone: the host running a call or subscription stopped
	// sending heartbeats (it died, or the network between is down).
	ErrHostGone = errors.New("remote: the host stopped answering")
)

// A call refused before it ran (a busy, draining or withdrawn host) is
// sent again after a pause that doubles from notRunWait up to
// notRunMaxWait, each jittered (a random part of up to half taken off),
// so that many refused calls do not come back together and a full host
// has time to free a slot: for as long as the call's timeout leaves, or
// maxNotRun times for a call with none.
const (
	notRunWait    = 5 * time.Millisecond
	notRunMaxWait = 500 * time.Millisecond
	maxNotRun     = 64
)

// closeFlush bounds Close's wait for the NATS server to take the
// cancels it sends.
const closeFlush = time.Second

// progressQueue bounds the heartbeats and progress updates waiting for
// one call's caller; past it they are dropped (heartbeats are redundant;
// a dropped progress update is the next one's to show).
const progressQueue = 16

// requester is what connopts.Instrument returns for wire: its Request
// traced and measured, and its subscriptions' traces started.
type requester = connopts.Traced[snodo.RequestOption, snodo.Era]

// Client calls one named server served by hosts over NATS: the same
// calls as a local pool (raw requests, typed calls, Listen). Any host of
// the name may take any call. Its methods are safe for concurrent use;
// Close may be called any number of times.
type Client struct {
	snodo.Calls // every typed call: ListTools, CallTool (input_required rounds answered here), ReadResource, …

	traced    requester // wire, traced and measured by snodo's instrument (internal/connopts): what Request calls
	nc        *nats.Conn
	owned     bool // Dial opened nc: Close closes it
	name      string
	cfg       config
	subj      subjects
	inbox     string // "_INBOX.<nuid>." — every reply of this client
	sub       *nats.Subscription
	seq       atomic.Int64
	era       atomic.Int32           // the snodo.Era learnt from replies, its index in knownEras; 0 until then
	lastOpts  atomic.Pointer[string] // the last Snodo-Opts value sent (optsValue)
	envOpts   atomic.Bool            // every host last heard from reads a call's settings in its payload (envOptsPrefix)
	unwatch   func()                 // ends the log of nc's state changes
	unroute   func()                 // ends the routing of nc's permission violations to this client
	peers     peers                  // the name's hosts and their room, for calls refused before they ran
	taskHosts taskTable[string]      // the host holding each task this client created (its id)

	out outbox[*pending] // calls on their way to NATS

	// Liveness of the hosts (detector.go).
	watchMu   sync.Mutex
	watched   map[string]*hostWatch         // by host id; at most maxWatched
	goneNext  atomic.Pointer[chan struct{}] // closed when the next host is found gone
	probeCtx  context.Context               // ends the probes at Close
	probeStop context.CancelFunc
	probes    sync.WaitGroup // the probes and asks under way; guarded by watchMu until probesOff
	probesOff bool           // Close began: no more probes; guarded by watchMu
	hostsAt   atomic.Int64   // when the hosts were last asked for their ids (learnHosts), unix nanoseconds
	goneAt    atomic.Int64   // when a host was last found gone, unix nanoseconds

	level   atomic.Pointer[string] // a legacy-era client's logging/setLevel level (legacy.go)
	serving sync.WaitGroup         // the handlers answering relayed server requests (legacy.go)

	mu     sync.Mutex
	calls  map[int64]*pending // by token
	subs   map[string]*hosted
	closed bool
}

// NewClient calls the server served as name through nc, which stays the
// caller's: Close leaves it open.
func NewClient(nc *nats.Conn, name string, opts ...ClientOption) (*Client, error) {
	if nc == nil {
		return nil, errors.New("remote: NewClient: nil *nats.Conn; pass a connection from nats.Connect (or use Dial)")
	}
	if err := natsname.Check("server name", name); err != nil {
		return nil, err
	}
	cfg, err := clientConfig(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{
		nc: nc, name: name, cfg: cfg, subj: subjectsOf(cfg.prefix, name),
		inbox: nc.NewRespInbox() + ".",
		calls: map[int64]*pending{},
		subs:  map[string]*hosted{},

		watched: map[string]*hostWatch{},
	}
	c.goneNext.Store(new(make(chan struct{})))
	c.probeCtx, c.probeStop = context.WithCancel(context.Background())
	c.traced = connopts.Instrument[snodo.RequestOption, snodo.Era, snodo.Option](wire{c}, cfg.tracers, cfg.meters, telemetry.TransportTCP, name)
	c.Calls = snodo.Calls(calls.New[snodo.RequestOption, snodo.Era](c, c.inputHandling))
	if c.sub, err = nc.Subscribe(c.inbox+"*", c.dispatch); err != nil {
		c.probeStop()
		return nil, fmt.Errorf("remote: subscribing to the reply inbox: %w", err)
	}
	// Take replies as fast as they come; the bound is per call.
	_ = c.sub.SetPendingLimits(-1, 64<<20)
	c.unwatch = watchConn(nc, cfg.logger, "caller of "+name, nil)
	c.unroute = routeDenials(nc, c)
	return c, nil
}

// Dial connects to the NATS server at url (with WithNATSOptions) and
// returns a Client for name that owns the connection. ctx bounds the
// connecting only: when it is done first, Dial returns its error
// (errors.Is context.Canceled or context.DeadlineExceeded) and a
// connection made afterwards is closed. Reconnects later (nats.go's,
// as WithNATSOptions sets them) and the calls do not use it.
func Dial(ctx context.Context, url, name string, opts ...ClientOption) (*Client, error) {
	if ctx == nil {
		return nil, errors.New("remote: Dial: nil context.Context; pass context.Background() or a ctx that bounds the connecting")
	}
	cfg, err := clientConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := natsname.Check("server name", name); err != nil {
		return nil, err
	}
	nc, err := connectNATS(ctx, url, cfg.natsOptions(nats.ReconnectBufSize(-1), nats.Name("snodo caller")))
	if err != nil {
		return nil, err
	}
	c, err := NewClient(nc, name, opts...)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// inputHandling answers the input requests of input_required results
// with the snodo.WithServerRequestHandler handler (WithConnectOptions),
// here on the caller's side;
// the retry goes to whichever host takes it.
func (c *Client) inputHandling() calls.InputHandling {
	serve := func(ctx context.Context, reqs []*snodo.ServerRequest, timeout time.Duration) ([]json.RawMessage, error) {
		return dispatch.Serve(ctx, c.cfg.handler, c.cfg.logger, reqs, timeout)
	}
	return calls.InputHandling{Serve: serve, MaxRounds: c.cfg.maxRounds}
}

// Name is the served name this client calls.
func (c *Client) Name() string { return c.name }

// Close fails the calls in flight with -32000 (errors.Is
// snodo.ErrClosed), ends the subscriptions (cancelled on their hosts) and
// stops taking replies. Idempotent; it returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	calls, subs := c.calls, c.subs
	c.calls, c.subs = map[int64]*pending{}, map[string]*hosted{}
	for _, p := range calls { // under mu: the calls reuse their pendings once they end
		select {
		case p.final <- nil:
		default:
		}
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.stop(closedErr("the client was closed", snodo.ErrClosed))
		<-s.Done()
	}
	_ = c.sub.Unsubscribe()
	for token := range calls {
		_ = c.nc.Publish(c.subj.cancel, []byte(c.inbox+strconv.FormatInt(token, 10))) // the hosts cancel them on their servers
	}
	// The cancels reach the NATS server before Close returns, when it is
	// there: while nats.go reconnects they wait in its buffer instead.
	if c.nc.IsConnected() {
		_ = c.nc.FlushTimeout(closeFlush)
	}
	c.watchMu.Lock()
	c.probesOff = true
	c.watchMu.Unlock()
	c.probeStop()
	c.probes.Wait()
	c.serving.Wait()
	c.unwatch()
	c.unroute()
	if c.owned {
		c.nc.Close()
	}
	return nil
}

// dispatch routes one message of the inbox to its call or subscription.
// It never blocks: it runs on the subscription's delivery goroutine. A
// call's message is handed over while mu is held, so that none reaches a
// call that has ended (its pending is reused).
func (c *Client) dispatch(m *nats.Msg) {
	token := m.Subject[len(c.inbox):]
	n, err := strconv.ParseInt(token, 10, 64)
	c.mu.Lock()
	if p := c.calls[n]; p != nil && err == nil {
		c.deliver(p, m)
		c.mu.Unlock()
		return
	}
	s := c.subs[token]
	c.mu.Unlock()
	if s != nil {
		s.deliver(m)
	}
}

// deliver hands m to the call p. c.mu is held.
func (c *Client) deliver(p *pending, m *nats.Msg) {
	p.heard.Store(true)
	switch m.Header.Get(hdrKind) {
	case "":
		select {
		case p.final <- m:
		default: // a second final reply: the first wins
		}
		return
	case kindRequest:
		select {
		case p.reqs <- m:
		default:
			refuseRelayed(m, "too many server requests of one call wait for the caller's handler")
		}
		return
	}
	select {
	case p.msgs <- m:
	default:
	}
}

// registerCall adds a call under a fresh token.
func (c *Client) registerCall(p *pending) (int64, error) {
	token := c.seq.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, closedErr("the client was closed", snodo.ErrClosed)
	}
	c.calls[token] = p
	return token, nil
}

func (c *Client) unregisterCall(token int64) {
	c.mu.Lock()
	delete(c.calls, token)
	c.mu.Unlock()
}

// register adds a subscription under a fresh token (of the same
// sequence as the calls').
func (c *Client) register(p *pending, s *hosted) (token string, err error) {
	_ = p // always nil: calls use registerCall
	token = strconv.FormatInt(c.seq.Add(1), 10)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", closedErr("the client was closed", snodo.ErrClosed)
	}
	c.subs[token] = s
	return token, nil
}

func (c *Client) unregister(token string) {
	c.mu.Lock()
	delete(c.subs, token)
	c.mu.Unlock()
}

// nilContextError refuses a call made with a nil ctx before anything is
// sent.
func nilContextError(what string) error {
	return fmt.Errorf("remote: %s: nil context.Context; nothing was sent: pass context.Background() or a ctx that bounds the call", what)
}

// noHostErr is a local -32000 wrapping ErrNoHost (and
// snodo.ErrConnectionClosed, as every -32000): no connection was lost,
// so its message does not say "connection closed".
func noHostErr(msg string) error {
	return jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed, msg, jsonrpc.ErrConnectionClosed, ErrNoHost)
}

// closedErr is a local -32000 wrapping why.
func closedErr(msg string, why ...error) error {
	return jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed, "connection closed: "+msg, append([]error{jsonrpc.ErrConnectionClosed}, why...)...)
}

// Request sends a JSON-RPC request to a host of the name and returns the
// raw result, exactly as the MCP server sent it (an input_required result
// included: typed calls complete those). params may be nil, a
// json.RawMessage, or anything json.Marshal accepts. Errors are those of
// snodo.Client.Request, plus -32000 for ErrNoHost and ErrHostGone. On
// timeout or when ctx is done, a cancel goes to the host, which cancels
// the call on its MCP server. A call marked snodo.Idempotent whose host
// went away is sent once more, to a surviving host, within what is left
// of its timeout.
//
// Each request is one CLIENT span and one operation measured (see
// WithConnectOptions), made where a local snodo.Client makes its own.
func (c *Client) Request(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error) {
	if ctx == nil {
		return nil, nilContextError(method)
	}
	return c.traced.Request(ctx, method, params, opts...)
}

// wire is the Client's requests as they go over NATS, untraced: what
// snodo's instrument wraps (internal/connopts).
type wire struct{ c *Client }

func (w wire) Request(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error) {
	return w.c.request(ctx, method, params, opts)
}
func (w wire) Era() snodo.Era { return w.c.Era() }

// request sends the call, again to another host when the first refused
// it before it ran or (for an idempotent call) went away.
func (c *Client) request(ctx context.Context, method string, params any, opts []snodo.RequestOption) (json.RawMessage, error) {
	o := calls.Of(opts)
	if method == "logging/setLevel" && c.cfg.era == snodo.EraLegacy {
		return c.setLevel(params)
	}
	raw, err := jsonrpc.Marshal(params)
	if err == nil && c.cfg.meta != nil {
		raw, err = jsonrpc.MergeMeta(raw, c.cfg.meta)
	}
	if err != nil {
		return nil, fmt.Errorf("remote: %s: cannot marshal params: %w", method, err)
	}
	t0 := time.Now()
	timeout := cmp.Or(o.Timeout, c.cfg.timeout) // negative: none
	retried := false
	to, taskHost := c.subj.call, ""
	if taskMethods[method] {
		// A task's later calls go to the host that holds it.
		if taskHost = c.taskHosts.get(taskIDOf(raw)); taskHost != "" {
			to = c.subj.callTo(taskHost)
		}
	}
	var pc *pinCall
	if c.cfg.era == snodo.EraLegacy { // a gateway session's calls go to one host (pin.go)
		if pc, err = pinOf(ctx); err != nil {
			return nil, err
		}
		defer pc.end()
	}
	if pc != nil && pc.holder != "" && taskHost == "" {
		to = c.subj.callTo(pc.holder)
	}
	for attempt, refused := 1, 0; ; attempt++ {
		o1 := o
		if timeout > 0 && attempt > 1 {
			o1.Timeout = max(timeout-time.Since(t0), time.Millisecond) // the retries count against it
		}
		res, host, notRun, err := c.once(ctx, to, method, raw, &o1, pc)
		pc.ran(host, notRun, err)
		if !notRun && to != c.subj.call && errors.Is(err, ErrNoHost) {
			if pc != nil && pc.holder != "" {
				return nil, c.lostHost(pc, method)
			}
			if taskHost != "" {
				return nil, closedErr(fmt.Sprintf("%s on %s: the host that held task %s serves it no more (it stopped or withdrew the name): the task was lost with it",
					method, c.name, taskIDOf(raw)), ErrHostGone, snodo.ErrTaskLost)
			}
			// The host chosen for a retry stopped taking calls: the call
			// did not run; another host may take it.
			host, notRun = to[len(c.subj.call)+1:], true
			c.forget(host)
		}
		switch {
		case err == nil:
			if method == "tools/call" && host != "" {
				if id := createdTaskID(res); id != "" && natsname.Valid.MatchString(host) {
					c.taskHosts.put(id, host)
				}
			}
			return res, nil
		case ctx.Err() != nil:
			return res, err
		case taskHost != "" && !notRun && errors.Is(err, snodo.ErrConnectionClosed) &&
			!errors.Is(err, nats.ErrConnectionReconnecting) && !errors.Is(err, snodo.ErrClosed) && !errors.Is(err, snodo.ErrTaskLost):
			// The host that holds the task stopped or went away in the
			// middle of one of its calls: the task is lost with it.
			return nil, jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed,
				fmt.Sprintf("%s on %s: the task was lost with the host that held it: %v", method, c.name, err),
				jsonrpc.ErrConnectionClosed, snodo.ErrTaskLost, err)
		case notRun:
			refused++
			pause := backoff(refused, notRunWait, notRunMaxWait)
			if timeout > 0 && time.Since(t0)+pause >= timeout || timeout <= 0 && refused >= maxNotRun {
				return res, err
			}
			c.cfg.logger.Debug("remote: call refused before it ran; sending it again", "server", c.name, "method", method, "error", err, "after", pause)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			if taskHost == "" && (pc == nil || pc.holder == "") {
				to = c.retryTo(ctx, host)
			}
		case o.Idempotent && !retried && errors.Is(err, ErrHostGone):
			// Safe to run twice: send it once more, to a surviving host,
			// within what is left of its timeout.
			retried = true
			if o.Timeout > 0 || (o.Timeout == 0 && c.cfg.timeout > 0) {
				left := cmp.Or(o.Timeout, c.cfg.timeout) - time.Since(t0)
				if left <= 0 {
					return res, err
				}
				o.Timeout = left
			}
			c.cfg.logger.Debug("remote: retrying an idempotent call after its host went away", "server", c.name, "method", method, "error", err)
			if taskHost == "" && (pc == nil || pc.holder == "") {
				to = c.subj.call
			}
		default:
			return res, err
		}
	}
}

// once sends the call once, to subject to. host is the host that
// answered (ran or refused it), and notRun reports a refusal before it
// ran.
func (c *Client) once(ctx context.Context, to, method string, params []byte, o *calls.Settings[snodo.Progress, snodo.TaskStatus], pc *pinCall) (_ json.RawMessage, host string, notRun bool, _ error) {
	if err := ctx.Err(); err != nil {
		return nil, "", false, err
	}
	p := getPending()
	token, err := c.registerCall(p)
	if err != nil {
		putPending(p)
		return nil, "", false, err
	}
	defer func() {
		c.unregisterCall(token) // nothing sends to p from here on
		if p.out.CompareAndSwap(outQueued, outAbandoned) {
			return // still in the outbox: its publisher puts p back
		}
		putPending(p)
	}()
	var subj [96]byte
	reply := string(strconv.AppendInt(append(subj[:0], c.inbox...), token, 10)) // one allocation, not two

	timeout := c.cfg.timeout
	if o.Timeout != 0 {
		timeout = o.Timeout
	}
	hostTimeout := timeout // what the host is told: the sooner of the timeout and ctx's deadline
	if dl, ok := ctx.Deadline(); ok && (hostTimeout <= 0 || time.Until(dl) < hostTimeout) {
		hostTimeout = max(time.Until(dl), time.Millisecond)
	}
	pinKey, pinNew := pc.settings()
	settings := c.optsValue(callOpts{
		beat: c.cfg.beat, timeout: max(hostTimeout, 0), total: o.MaxTotalTimeout, alive: true,
		progress: o.OnProgress != nil || o.ResetTimeoutOnProgress, reset: o.ResetTimeoutOnProgress,
		era: c.era.Load() == 0, legacy: c.cfg.era == snodo.EraLegacy, log: c.logLevel(),
		pin: pinKey, pinNew: pinNew,
	})
	m := &p.msg
	*m = nats.Msg{Subject: to, Reply: reply, Header: p.header()}
	injectTrace(ctx, m.Header)
	if len(m.Header) == 0 && c.envOpts.Load() && plainOpts(settings) {
		// No header at all: the settings travel in the payload.
		m.Header = nil
		p.buf = trimNL(appendEnvRequest(p.buf[:0], settings, token, method, params))
	} else {
		m.Header[hdrOpts] = append(p.opts[:0], settings)
		p.buf = trimNL(jsonrpc.AppendRequest(p.buf[:0], token, method, params))
	}
	m.Data = p.buf

	// One timer for the call: it fires at the soonest of its timeout, its
	// MaxTotalTimeout and the end of its host's allowed silence.
	t0 := time.Now()
	c.learnHosts(t0)
	var timeoutAt, totalAt time.Time
	if timeout > 0 {
		timeoutAt = t0.Add(timeout)
	}
	if o.MaxTotalTimeout > 0 {
		totalAt = t0.Add(o.MaxTotalTimeout)
	}
	// The host's silence: suspected after watch.suspectAfter (detector.go),
	// then probed every beat; gone when NATS holds no connection of it, or
	// after hostSilenceCap of silence while it holds one.
	var watch *hostWatch   // the host holding the call, once it has said which
	var lastBeat time.Time // the call's last heartbeat, for the gaps between beats
	heardAt := t0          // when the host last sent the call anything
	gone := c.anyGone()    // the call's host, or any host while it is unknown, is gone
	silentAt := t0.Add(watch.suspectAfter(c.cfg.beat))
	arm := func(now time.Time) {
		next := silentAt
		for _, at := range [...]time.Time{timeoutAt, totalAt} {
			if !at.IsZero() && at.Before(next) {
				next = at
			}
		}
		p.timer.Reset(next.Sub(now))
	}
	arm(t0)

	if err := c.send(p, method); err != nil {
		return nil, "", false, err // not run, but not to be sent again: NATS is down
	}
	cancel := func() { _ = c.nc.Publish(c.subj.cancel, []byte(reply)) }
	// The server requests relayed to this call are answered under rctx,
	// which ends with the call (made with the first of them).
	var relayed callScope
	defer relayed.end()
	// onProgress runs the caller's progress function for a progress update
	// (a heartbeat only feeds the watchdog).
	onProgress := func(m *nats.Msg) {
		switch m.Header.Get(hdrKind) {
		case kindProgress:
		case kindLog:
			c.relayLog(ctx, m)
			return
		case kindPinned: // the host kept the session's pin (pin.go)
			pc.pinned(m.Header.Get(hdrHost))
			return
		default:
			return
		}
		if o.ResetTimeoutOnProgress && timeout > 0 {
			timeoutAt = time.Now().Add(timeout)
		}
		var wp wireProgress
		if o.OnProgress == nil || json.Unmarshal(m.Data, &wp) != nil {
			return
		}
		c.progress(o.OnProgress, snodo.Progress{Progress: wp.Progress, Total: wp.Total, Message: wp.Message}, cancel)
	}
	for {
		select {
		case m := <-p.final:
			if m == nil {
				return nil, "", false, closedErr("the client was closed", snodo.ErrClosed)
			}
			// Progress runs before the result, as on a local call: the
			// updates the host sent before its reply are already queued
			// (one subscription delivers in order), but select may have
			// picked the reply first.
			for drained := false; !drained; {
				select {
				case u := <-p.msgs:
					onProgress(u)
				default:
					drained = true
				}
			}
			res, notRun, err := c.result(method, m)
			return res, m.Header.Get(hdrHost), notRun, err
		case m := <-p.reqs:
			c.answerRelayed(relayed.get(ctx), m)
			heardAt = time.Now()
		case m := <-p.msgs:
			now := time.Now()
			if m.Header.Get(hdrKind) == kindBeat {
				id := m.Header.Get(hdrHost)
				c.keepAlive(id, reply)
				if watch == nil && id != "" {
					watch = c.watchFor(id)
					gone = watch.gone
				}
				if watch != nil && !lastBeat.IsZero() {
					watch.addGap(now.Sub(lastBeat), now)
				}
				lastBeat = now
			}
			onProgress(m)
			heardAt = now
			silentAt = now.Add(watch.suspectAfter(c.cfg.beat))
			arm(now)
		case <-gone:
			if watch == nil && time.Since(heardAt) < watch.suspectAfter(c.cfg.beat) {
				gone = c.anyGone() // some other host is gone; this call's host has not been silent long
				continue
			}
			cancel()
			return nil, "", false, c.hostGoneErr(method, time.Since(heardAt))
		case err := <-p.denied:
			return nil, "", false, permissionError(fmt.Sprintf("remote: %s on %s was not sent", method, c.name), err)
		case err := <-p.unsent:
			return nil, "", false, err
		case <-p.timer.C:
			now := time.Now()
			switch {
			case !timeoutAt.IsZero() && !now.Before(timeoutAt), !totalAt.IsZero() && !now.Before(totalAt):
				cancel()
				return nil, "", false, timeoutErr(method, c.name, now.Sub(t0))
			case watch == nil && !now.Before(silentAt) && c.goneAt.Load() > t0.UnixNano():
				// Not heard from its host, and a host was found gone
				// since it was sent: that one held it.
				cancel()
				return nil, "", false, c.hostGoneErr(method, now.Sub(heardAt))
			case !now.Before(silentAt):
				silence := now.Sub(heardAt)
				if c.nc.IsConnected() && silence < hostSilenceCap(c.cfg.beat) {
					// Suspected: ask NATS whether the host's connection
					// lives (gone answers), and look again in a beat.
					c.suspect(watch)
					silentAt = now.Add(c.cfg.beat)
					break
				}
				cancel()
				why := "NATS still holds its connection: starved or cut off"
				if !c.nc.IsConnected() {
					why = "NATS unreachable (reconnecting)"
				}
				return nil, "", false, closedErr(fmt.Sprintf("%s on %s: the host running it sent nothing for %s (%s)",
					method, c.name, silence.Round(time.Millisecond), why), ErrHostGone)
			}
			arm(now) // a progress update moved the timeout on
		case <-ctx.Done():
			cancel()
			return nil, "", false, ctx.Err()
		}
	}
}

// pending is one call waiting for its host. Pendings are reused (see
// getPending): only dispatch, publishDenied and Close send to one, each
// while holding the client's mu and finding it in the client's calls.
type pending struct {
	final  chan *nats.Msg // the reply (or the no-responders status; nil: the client closed)
	msgs   chan *nats.Msg // heartbeats, progress and logs, bounded by progressQueue
	reqs   chan *nats.Msg // server requests relayed by a legacy host, bounded by relayQueue
	denied chan error     // the NATS server refused to publish the call
	unsent chan error     // publishing the call failed (when another caller published it)
	out    atomic.Int32   // outIdle, outQueued (in the client's outbox), outAbandoned (queued, its caller gone)
	method string         // the call's method, for unsent's error
	heard  atomic.Bool    // a host has sent something for it
	timer  *time.Timer    // the call's timeout, MaxTotalTimeout and watchdog, whichever comes first
	msg    nats.Msg       // the call as sent (nats.go copies it when publishing)
	hdr    nats.Header
	opts   []string // the Snodo-Opts header's value
	buf    []byte   // the request's bytes
}

// A pending's place in the client's outbox (pending.out).
const (
	outIdle      = iota // not queued: its caller owns it
	outQueued           // queued, or being published
	outAbandoned        // queued when its caller gave up: the publisher puts it back
)

// pendings are the pendings of calls that ended, for the next calls:
// their channels, timer and buffers cost nothing more per call.
var pendings = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &pending{final: make(chan *nats.Msg, 1), msgs: make(chan *nats.Msg, progressQueue), reqs: make(chan *nats.Msg, relayQueue), denied: make(chan error, 1),
		unsent: make(chan error, 1), timer: t, hdr: nats.Header{}, opts: make([]string, 0, 1)}
}}

// maxPooledRequest bounds the request buffer a pending keeps for the
// next call.
const maxPooledRequest = 16 << 10

func getPending() *pending { return pendings.Get().(*pending) }

// putPending empties p (no one sends to it any more) and keeps it for
// the next call.
func putPending(p *pending) {
	p.timer.Stop()
	for drained := false; !drained; {
		select {
		case <-p.final:
		case <-p.msgs:
		case m := <-p.reqs:
			refuseRelayed(m, "the call has ended")
		case <-p.denied:
		case <-p.unsent:
		default:
			drained = true
		}
	}
	p.heard.Store(false)
	p.out.Store(outIdle)
	p.method = ""
	p.msg = nats.Msg{}
	if cap(p.buf) > maxPooledRequest {
		p.buf = nil
	}
	pendings.Put(p)
}

// header is p's call header, emptied of what the last call put there.
func (p *pending) header() nats.Header {
	clear(p.hdr)
	return p.hdr
}

// send publishes p's call through the client's outbox (so that calls
// made together leave in one write), or fails at once, having sent
// nothing, when the connection is not up: a call nats.go buffered while
// it reconnects would reach a host after its caller had been told it
// failed. When another caller publishes the outbox, a failure to publish
// reaches p later, on p.unsent.
func (c *Client) send(p *pending, method string) error {
	if c.nc.IsConnected() {
		p.method = method
		p.out.Store(outQueued)
		c.out.send(p, c.publishCall)
		select {
		case err := <-p.unsent: // this caller published it, and it failed
			return err
		default:
			return nil
		}
	}
	return c.unsentErr(method, nil)
}

// publishCall publishes a call queued by send, from whichever caller
// publishes the outbox. A call whose caller gave up while it was queued
// (once returned) is published all the same (the cancel its caller sent
// may then reach the host first: the host remembers it), and its
// pending is put back here.
func (c *Client) publishCall(p *pending) {
	if err := c.nc.PublishMsg(&p.msg); err != nil {
		select {
		case p.unsent <- c.unsentErr(p.method, err):
		default:
		}
	}
	if !p.out.CompareAndSwap(outQueued, outIdle) { // its caller has gone
		putPending(p)
	}
}

// unsentErr is the error of a call that was not sent: publishing it
// failed (err), or the connection was not up (err nil).
func (c *Client) unsentErr(method string, err error) error {
	if err != nil && !errors.Is(err, nats.ErrReconnectBufExceeded) && !errors.Is(err, nats.ErrConnectionReconnecting) {
		return closedErr(fmt.Sprintf("cannot send %s to %s over NATS: %v", method, c.name, err), err)
	}
	if c.nc.IsClosed() {
		return closedErr(fmt.Sprintf("cannot send %s to %s: the NATS connection closed for good", method, c.name), nats.ErrConnectionClosed)
	}
	return jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed, fmt.Sprintf("%s to %s was not sent: NATS unreachable (reconnecting)", method, c.name),
		jsonrpc.ErrConnectionClosed, nats.ErrConnectionReconnecting)
}

// keepAlive answers a running call's heartbeat: its host cancels a call
// whose caller stops answering (it died, or is cut off), so no server
// works for nobody.
func (c *Client) keepAlive(host, reply string) {
	if host == "" || !natsname.Valid.MatchString(host) {
		return
	}
	m := nats.NewMsg(controlSubject(c.cfg.prefix, host))
	m.Header.Set(hdrOp, opKeepalive)
	m.Header.Set(hdrCall, reply)
	_ = c.nc.PublishMsg(m)
}

// progress runs the caller's progress function; a panic cancels the call
// on its host and continues in the caller.
func (c *Client) progress(fn func(snodo.Progress), p snodo.Progress, cancel func()) {
	ok := false
	defer func() {
		if !ok {
			cancel()
		}
	}()
	fn(p)
	ok = true
}

func timeoutErr(method, name string, waited time.Duration) error {
	return jsonrpc.NewLocalError(jsonrpc.CodeTimeout,
		fmt.Sprintf("request timed out: %s on %s after %s", method, name, waited.Round(time.Millisecond)), jsonrpc.ErrTimeout)
}

// result reads a call's final reply.
func (c *Client) result(method string, m *nats.Msg) (json.RawMessage, bool, error) {
	if m.Header.Get(hdrStatus) == noResponders {
		return nil, false, noHostErr(fmt.Sprintf("no host serves %q (subject %s): start a snodo node that serves it, connected to this NATS system",
			c.name, c.subj.call))
	}
	if c.cfg.era != snodo.EraLegacy { // a legacy-era caller learns its era from Info alone
		c.learnEra(m.Header.Get(hdrEra))
	}
	env, err := jsonrpc.Scan(m.Data)
	if err != nil || env.Kind != jsonrpc.KindResponse {
		return nil, false, fmt.Errorf("remote: %s on %s: the host sent a reply that is not a JSON-RPC response: %.200q", method, c.name, m.Data)
	}
	if env.Error == nil {
		return json.RawMessage(env.Result), false, nil
	}
	var e jsonrpc.Error
	if err := json.Unmarshal(env.Error, &e); err != nil {
		return nil, false, fmt.Errorf("remote: %s on %s: malformed error object: %w", method, c.name, err)
	}
	if m.Header.Get(hdrLocal) == "" {
		return nil, false, &e // the MCP server's own error
	}
	notRun := m.Header.Get(hdrNotRun) != ""
	msg := "host " + m.Header.Get(hdrHost) + ": " + e.Message
	if m.Header.Get(hdrPinLost) != "" { // a session's pin (pin.go)
		return nil, false, pinLostErr(msg)
	}
	switch e.Code {
	case jsonrpc.CodeConnectionClosed:
		return nil, notRun, jsonrpc.NewLocalError(e.Code, msg, jsonrpc.ErrConnectionClosed)
	case jsonrpc.CodeTimeout:
		return nil, false, jsonrpc.NewLocalError(e.Code, msg, jsonrpc.ErrTimeout)
	}
	return nil, false, &e
}
