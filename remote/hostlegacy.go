package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/natsname"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/supervisor"
)

// The legacy side of a served name. A host connects its pools as their
// servers let it, in the modern era when a server speaks both; a caller
// of the legacy era (snodo.WithEra(snodo.EraLegacy) on a remote client,
// or a legacy client of `snodo serve` in front of the name) then met the
// modern server's behaviour. With ServeLegacy the host also has a pool
// connected to the same server in the legacy era, started when the first
// legacy call comes, and relays to that call's caller what its server
// sends during it: the server's requests (sampling, elicitation, roots),
// answered by the caller's own handler, and its log messages.
//
// Which call a server request or log message belongs to: a stdio
// server's request carries nothing that names the request it serves. The
// host gives it to the legacy call of the name that started last among
// those in flight (on a pool of one, the very call whenever one caller at
// a time calls); with none in flight a request is refused (-32603, saying
// why) and a log message dropped.

// legacyStart starts the pool ServeLegacy serves (see there).
type legacyStart = func(ctx context.Context, opts ...snodo.Option) (*supervisor.Pool, error)

// Bounds of the legacy side.
const (
	// legacyStartWait bounds how long a legacy call waits for the
	// legacy-era pool to start.
	legacyStartWait = 30 * time.Second
	// legacyRetry is how long a failed start is remembered (calls fail at
	// once with its error) before the next legacy call tries again.
	legacyRetry = 5 * time.Second
	// logFlushWait bounds the wait, after a call whose caller wants logs,
	// for the log messages its server sent before its result.
	logFlushWait = time.Second
)

// ServeLegacy gives the host, for name (served with Serve too), a second
// pool connected to the same server in the legacy era, for the callers of
// the legacy era (snodo.WithEra(snodo.EraLegacy) in WithConnectOptions).
// start makes it, when the first such call arrives: the same server as
// the name's pool, with opts added last to its connect options
// (supervisor.WithConnectOptions(opts...)). opts carry
// snodo.WithEra(snodo.EraLegacy), the client capabilities the relayed
// callers may have, and the handlers that relay the server's requests
// and log messages to the callers; ctx owns the pool and ends when the
// host has stopped. Legacy calls wait for the start at most 30 s; a
// start that failed fails the legacy calls of the next 5 s with its
// error, then is tried again. The
// requests that server sends during a call are relayed to the call's
// caller, whose handler answers them, and its log messages at or above
// the caller's level go to the caller before the call's result. Their
// subscriptions (Listen) are served by that pool too, started by the
// first if need be: the resources a caller subscribes to are then those
// of the servers its calls reach. The host
// owns the pool: it closes it when it stops. Without ServeLegacy, legacy
// callers are served by the name's pool. Hosts.
func ServeLegacy(name string, start func(ctx context.Context, opts ...snodo.Option) (*supervisor.Pool, error)) HostOption {
	return hostOption(func(c *config) error {
		if err := natsname.Check("server name", name); err != nil {
			return err
		}
		if start == nil {
			return fmt.Errorf("remote: ServeLegacy(%q): nil start function", name)
		}
		if _, dup := c.legacy[name]; dup {
			return fmt.Errorf("remote: ServeLegacy(%q): given twice", name)
		}
		if c.legacy == nil {
			c.legacy = map[string]legacyStart{}
		}
		c.legacy[name] = start
		return nil
	})
}

// legacySide is the legacy-era pool of one served name.
type legacySide struct {
	h     *Host
	s     *served
	start legacyStart
	life  context.Context // the pool's owner: ends when the host has stopped
	end   context.CancelFunc

	mu       sync.Mutex
	ready    chan struct{} // closed when the start ended; nil: not started
	pool     *supervisor.Pool
	err      error // the start's, while failedAt is recent
	failedAt time.Time
	closed   bool
	level    int                      // the pool's logging level (logRank); -1: none set
	calls    []*heldCall              // the legacy calls in flight, in start order (each holds a host slot: at most maxHeld)
	levelMu  sync.Mutex               // serializes SetLoggingLevel
	bg       sync.WaitGroup           // info answers under way (info)
	tasks    taskTable[*snodo.Client] // the tasks its members created, by id: the member holding each
	pins     memberPins               // the gateway sessions' pins: key → the member its calls go to (pin.go)
	// lent is what each live connection of the pool lends (its
	// notifications' flush), added as each connects (connopts.LendEach)
	// and let go at the next connect or flush after it ended (liveLent).
	lent []connopts.Lent
}

func newLegacySide(h *Host, s *served, start legacyStart) *legacySide {
	life, end := context.WithCancel(context.Background())
	return &legacySide{h: h, s: s, start: start, life: life, end: end, level: -1}
}

// get is the legacy-era pool, started by the first call (the others
// wait for it, each at most while its ctx lasts and legacyStartWait).
func (l *legacySide) get(ctx context.Context) (*supervisor.Pool, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errHostClosed
	}
	if l.ready == nil || l.err != nil && time.Since(l.failedAt) > legacyRetry {
		l.ready, l.err = make(chan struct{}), nil
		go l.run(l.ready)
	}
	ready := l.ready
	l.mu.Unlock()
	t := time.NewTimer(legacyStartWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.C:
		return nil, fmt.Errorf("it has not started after %v", legacyStartWait)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pool, l.err
}

// run starts the pool.
func (l *legacySide) run(ready chan struct{}) {
	opts := []snodo.Option{
		snodo.WithEra(snodo.EraLegacy),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{
			Roots:       &snodo.ListChangedCapability{},
			Sampling:    &snodo.SamplingCapability{Context: true, Tools: true},
			Elicitation: &snodo.ElicitationCapability{Form: true, URL: true},
		}),
		snodo.WithServerRequestHandler(l.serverRequest),
		snodo.WithNotificationHandler(l.notification),
		connopts.LendEach[snodo.Option](func(lent connopts.Lent) {
			l.mu.Lock()
			l.lent = append(l.liveLent(), lent)
			l.mu.Unlock()
		}),
	}
	p, err := l.start(l.life, opts...)
	if err == nil && p == nil {
		err = errors.New("its start function returned no pool")
	}
	l.mu.Lock()
	if err == nil && l.closed {
		_ = p.Close()
		p, err = nil, errHostClosed
	}
	l.pool, l.err = p, err
	if err != nil {
		l.failedAt = time.Now()
		l.h.cfg.logger.Warn("remote: the legacy-era pool did not start", "server", l.s.name, "error", err)
	}
	l.mu.Unlock()
	close(ready)
}

// close ends a start under way and closes the pool; done is the pool's
// Done (nil without one).
func (l *legacySide) close() (done <-chan struct{}) {
	l.mu.Lock()
	l.closed = true
	ready := l.ready
	l.mu.Unlock()
	l.end()
	if ready != nil {
		<-ready
	}
	l.bg.Wait()
	l.mu.Lock()
	p := l.pool
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	_ = p.Close()
	return p.Done()
}

// request runs a legacy call on the legacy-era pool: hc is its held
// call, o its settings (o.log the caller's logging level, "" for no
// logs; o.pin a session's pin key). A pinned call runs on the member its
// key is pinned to (pin.go), or fails with pin.ErrLost. Otherwise a
// tools/call that asks for a task runs on the member the pool chooses
// for tasks, and the task it created (created) is filed with that
// member, where its later calls go (Host.requestOn), as on the name's
// pool.
func (l *legacySide) request(ctx context.Context, hc *heldCall, method string, o callOpts, ro []snodo.RequestOption) (_ json.RawMessage, created bool, _ error) {
	level := o.log
	p, err := l.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, err
		}
		return nil, false, jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed,
			fmt.Sprintf("host %s cannot start the legacy-era connection of %s: %v", l.h.label, l.s.name, err), jsonrpc.ErrConnectionClosed)
	}
	var pinned *snodo.Client
	if o.pin != "" {
		if pinned, err = l.pinned(ctx, p, o.pin, o.pinNew); err != nil {
			return nil, false, err
		}
		if o.pinNew {
			// The session's other calls wait for this one's host: they
			// may come now (pin.go).
			m := nats.NewMsg(hc.reply)
			m.Header.Set(hdrKind, kindPinned)
			m.Header.Set(hdrHost, l.h.id)
			l.h.publish(m)
		}
	}
	if level != "" {
		l.lower(ctx, p, level)
	}
	l.mu.Lock()
	hc.ctx, hc.level = ctx, logRank(level)
	l.calls = append(l.calls, hc)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if i := slices.Index(l.calls, hc); i >= 0 {
			l.calls = slices.Delete(l.calls, i, i+1)
		}
		l.mu.Unlock()
	}()
	res, created, err := l.h.requestOn(ctx, p, &l.tasks, pinned, method == "tools/call" && asksForTask(hc.params), method, &hc.params, ro)
	if level != "" {
		l.flush()
	}
	return res, created, err
}

// listen opens a legacy-era caller's subscription on the legacy-era
// pool, started now if need be (as for a call: at most legacyStartWait,
// while ctx lasts); a pinned one (o.pin) on the member its key is pinned
// to (pin.go), where it ends when that member stops.
func (l *legacySide) listen(ctx context.Context, f snodo.Filter, o callOpts) (*snodo.Subscription, error) {
	p, err := l.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed,
			fmt.Sprintf("host %s cannot start the legacy-era connection of %s: %v", l.h.label, l.s.name, err), jsonrpc.ErrConnectionClosed)
	}
	if o.pin != "" {
		conn, err := l.pinned(ctx, p, o.pin, o.pinNew)
		if err != nil {
			return nil, err
		}
		return conn.Listen(ctx, f)
	}
	return p.Listen(ctx, f)
}

// lower sets the pool's logging level to level when it is less severe
// than the pool's: the level of a connection is one for all its callers,
// so it only ever goes down, and each call's log messages are filtered
// by its own caller's level.
func (l *legacySide) lower(ctx context.Context, p *supervisor.Pool, level string) {
	l.levelMu.Lock()
	defer l.levelMu.Unlock()
	l.mu.Lock()
	cur := l.level
	l.mu.Unlock()
	r := logRank(level)
	if cur >= 0 && cur <= r {
		return
	}
	if err := p.SetLoggingLevel(ctx, snodo.LoggingLevel(level)); err != nil {
		l.h.cfg.logger.Debug("remote: logging/setLevel on the legacy-era pool failed", "server", l.s.name, "error", err)
		return
	}
	l.mu.Lock()
	l.level = r
	l.mu.Unlock()
}

// flush waits (at most logFlushWait) until the log messages the pool's
// servers sent so far have been handed to the callers: a server sends a
// call's logs before its result, and they reach notification (on the
// connection's notification queue) after the result has reached the call.
func (l *legacySide) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), logFlushWait)
	defer cancel()
	l.mu.Lock()
	live := l.liveLent()
	l.lent = live
	flushes := make([]func(context.Context) error, len(live))
	for i, lent := range live {
		flushes[i] = lent.Flush
	}
	l.mu.Unlock()
	for _, flush := range flushes {
		_ = flush(ctx)
	}
}

// liveLent is l.lent without the connections that have ended, in
// place; l.mu is held. Run at every connect and every flush, it keeps
// l.lent to the pool's live connections and at most one that ended
// since, however often the pool's servers restart.
func (l *legacySide) liveLent() []connopts.Lent {
	live := l.lent[:0]
	for _, lent := range l.lent {
		select {
		case <-lent.Done:
		default:
			live = append(live, lent)
		}
	}
	clear(l.lent[len(live):])
	return live
}

// info answers a legacy-era caller's info request from the legacy-era
// pool, started now if need be, on a goroutine of its own (the start may
// take a while; the info endpoint goes on): its server's description
// (era legacy) with the host's pool state, or an error (503) saying why
// it cannot start.
func (l *legacySide) info(r *nats.Msg, t0 time.Time) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.bg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.bg.Done()
		s := l.s
		ctx, cancel := context.WithTimeout(l.life, legacyStartWait)
		defer cancel()
		p, err := l.get(ctx)
		var cur *snodo.Client
		if err == nil {
			for _, m := range p.Members() {
				if c := m.Current(); c != nil && c.Err() == nil {
					cur = c
					break
				}
			}
			if cur == nil {
				err = errors.New("no member is connected now (restarting)")
			}
		}
		if err != nil {
			why := fmt.Sprintf("the legacy-era connection of %s cannot serve: %v", s.name, err)
			s.infoStats.fail(why)
			m := nats.NewMsg(r.Reply)
			m.Header.Set(micro.ErrorHeader, why)
			m.Header.Set(micro.ErrorCodeHeader, "503")
			_ = r.RespondMsg(m)
			s.infoStats.record(time.Since(t0))
			return
		}
		si := infoOf(cur, l.h)
		st := l.h.poolState(s)
		si.Pool = &st
		b, _ := json.Marshal(si)
		_ = r.Respond(b)
		s.infoStats.record(time.Since(t0))
	}()
}

// latest is the legacy call in flight that started last and that match
// accepts.
func (l *legacySide) latest(match func(*heldCall) bool) *heldCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.calls) - 1; i >= 0; i-- {
		if match(l.calls[i]) {
			return l.calls[i]
		}
	}
	return nil
}

// serverRequest relays a request of the legacy-era server to the caller
// of the call it belongs to (latest), and returns the caller's answer.
// It waits while the request lasts on the connection (ctx) and the call
// lasts.
func (l *legacySide) serverRequest(ctx context.Context, req *snodo.ServerRequest) (any, error) {
	hc := l.latest(func(*heldCall) bool { return true })
	if hc == nil {
		return nil, &snodo.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("host %s: no remote call of %s in flight to relay %s to", l.h.label, l.s.name, safetext.Visible(req.Method))}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(hc.ctx, cancel)
	defer stop()
	m := nats.NewMsg(hc.reply)
	m.Header.Set(hdrKind, kindRequest)
	m.Header.Set(hdrHost, l.h.id)
	m.Data = trimNL(jsonrpc.AppendRequest(nil, 1, req.Method, req.Params))
	answer, err := l.h.reply.RequestMsgWithContext(ctx, m)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &snodo.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("host %s could not relay %s to the caller: %v", l.h.label, safetext.Visible(req.Method), err)}
	}
	env, err := jsonrpc.Scan(answer.Data)
	if err != nil || env.Kind != jsonrpc.KindResponse {
		return nil, &snodo.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("host %s: the caller answered %s with no JSON-RPC response", l.h.label, safetext.Visible(req.Method))}
	}
	if env.Error != nil {
		var e snodo.Error
		if json.Unmarshal(env.Error, &e) != nil {
			return nil, &snodo.Error{Code: jsonrpc.CodeInternalError, Message: "the caller answered a malformed error"}
		}
		return nil, &e
	}
	return json.RawMessage(env.Result), nil
}

// notification relays a log message of the legacy-era server to the
// caller of the latest call in flight whose level it meets. Other
// notifications (list changes, resource updates) reach legacy-era
// callers through their subscriptions (Listen), which this pool serves
// (listen).
func (l *legacySide) notification(_ context.Context, n *snodo.Notification) {
	if n.Method != "notifications/message" {
		return
	}
	lv, _ := jsonrpc.Member(n.Params, "level")
	r := logRank(jsonrpc.Unquote(lv))
	hc := l.latest(func(hc *heldCall) bool { return hc.level >= 0 && r >= hc.level })
	if hc == nil {
		return
	}
	m := nats.NewMsg(hc.reply)
	m.Header.Set(hdrKind, kindLog)
	m.Header.Set(hdrHost, l.h.id)
	m.Data = n.Params
	l.h.publish(m)
}
