package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/natsname"
	"github.com/snodo/snodo/internal/pin"
	"github.com/snodo/snodo/supervisor"
)

// Pinned calls: a gateway session's calls on one server (internal/pin).
// The gateway puts its session's pin in the ctx of each call it makes.
// A Client of the legacy era (the gateway's legacy-era twin; a modern
// one leaves the ctx alone, so its calls pay nothing for it) sends the
// session's first call to the queue group (any host takes it), with the
// pin's key and pinnew in its settings (Snodo-Opts pin=KEY pinnew), and
// every later one to the host that ran the first, on that host's own
// call subject (call.HOSTID), with the key alone; a subscription
// (Listen) goes the same way, to listen.HOSTID after the first. The pin
// itself remembers that host: it lives as long as the session, so the
// Client keeps no table of its own (nothing to bound or expire: the
// gateway's session table is bounded and expires idle sessions). A host
// keeps each key on the member of its legacy-era pool (ServeLegacy) it
// chose for the first call (in turn among the members up), says so to
// that call's caller (kindPinned) and runs the key's later calls there
// (requestOn) and its subscriptions there too; a call of the name's own
// pool is not pinned to a member. The pin is lost, and the call fails with a -32000 that wraps
// internal/pin.ErrLost and snodo.ErrConnectionClosed, when:
//   - the host holding it takes calls no more (it stopped, or withdrew the
//     name: no responders on its subject; a restarted node is a new host);
//   - that host's member stopped (killed, crashed, restarted by its
//     supervisor, or taken out of the pool): its connection has ended;
//   - that host no longer knows the key: it forgets a key idle for
//     pinIdle, and past maxPins keys the one idle longest.
//
// None of these runs the call. Every later call of a lost pin fails at
// once the same way, until the pin's owner starts afresh (pin.Repin).

// kindPinned (Snodo-Kind) tells the caller of a call that makes a pin
// that its host has kept the key on a member, before the call runs: the
// session's other calls, which wait for it, may go to that host now.
const kindPinned = "pinned"

// hdrPinLost, on a final error (with Snodo-Local), says that the call's
// pin is lost on the host (see above): the call did not run.
const hdrPinLost = "Snodo-Pin-Lost"

// Bounds of a host's pins (per served name).
const (
	// maxPins bounds the keys a host keeps; past it the key idle longest
	// is forgotten (its next call fails: the pin is lost).
	maxPins = 4096
	// pinIdle is how long a host keeps a key no call used. A gateway's
	// legacy session idles out after 10 min by default.
	pinIdle = 30 * time.Minute
	// pinSweep is the least time between two sweeps of the keys idle past
	// pinIdle (at a new key), so that they go even below maxPins.
	pinSweep = time.Minute
)

// listenTo is the subject on which only host id takes subscriptions of
// the name: those of a pinned session (a subscription's pin is routed as
// a call's).
func (s subjects) listenTo(id string) string { return s.listen + "." + id }

// pinLostErr is the error of a call whose pin is lost.
func pinLostErr(msg string) error {
	return jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed, msg, jsonrpc.ErrConnectionClosed, pin.ErrLost)
}

// pinCall is a call's pin, as request routes it.
type pinCall struct {
	p      *pin.Pin
	t      pin.Ticket
	holder string // the host holding the pin; "" for the call that makes it
	first  bool   // this call makes the pin
	ranOn  string // first: the host that ran it
}

// pinOf routes a call whose ctx carries a pin; nil without one. A lost
// pin's error comes back as it is.
func pinOf(ctx context.Context) (*pinCall, error) {
	p := pin.From(ctx)
	if p == nil || !pin.ValidKey(p.Key()) {
		return nil, nil
	}
	t, err := p.Route(ctx)
	if err != nil {
		return nil, err
	}
	if !t.First && !natsname.Valid.MatchString(t.Holder) {
		return nil, nil
	}
	return &pinCall{p: p, t: t, holder: t.Holder, first: t.First}, nil
}

// settings are the pin fields of the call's Snodo-Opts.
func (pc *pinCall) settings() (key string, isNew bool) {
	if pc == nil {
		return "", false
	}
	return pc.p.Key(), pc.first
}

// ran takes what one sending of the call met: host ran it (or refused
// it, notRun), with err. A lost pin is marked so; the call that makes
// the pin keeps the host that ran it, unless that host failed it itself
// (a local error: it may not have kept the key).
func (pc *pinCall) ran(host string, notRun bool, err error) {
	if pc == nil {
		return
	}
	if errors.Is(err, pin.ErrLost) {
		pc.p.Lose(pc.t, err)
		return
	}
	var e *jsonrpc.Error
	if pc.first && !notRun && host != "" && natsname.Valid.MatchString(host) && (err == nil || errors.As(err, &e) && !e.Local()) {
		pc.ranOn = host
	}
}

// pinned takes the host's word (kindPinned) that it kept the pin: the
// calls waiting for it go there now, not when this call ends.
func (pc *pinCall) pinned(host string) {
	if pc == nil || !pc.first || !natsname.Valid.MatchString(host) {
		return
	}
	pc.ranOn = host
	pc.p.Made(pc.t, host)
}

// end ends the call: the one that made the pin says where it ran.
func (pc *pinCall) end() {
	if pc != nil && pc.first {
		pc.p.Made(pc.t, pc.ranOn)
	}
}

// lostHost is the error of a pinned call whose host takes calls no more.
func (c *Client) lostHost(pc *pinCall, method string) error {
	err := pinLostErr(fmt.Sprintf("%s on %s: host %s, which held this session's server, serves it no more (it stopped or withdrew the name): the session's state went with it",
		method, c.name, pc.holder))
	pc.p.Lose(pc.t, err)
	return err
}

// answerPinLost answers a call whose pin is lost on this host (err says
// why): a local -32000 that names it (hdrPinLost), which the caller
// turns into pin.ErrLost.
func (h *Host) answerPinLost(s *served, reply string, id []byte, err error) {
	var e *jsonrpc.Error
	msg := err.Error()
	if errors.As(err, &e) {
		msg = e.Message
	}
	s.callStats.fail(msg)
	m := nats.NewMsg(reply)
	m.Header.Set(hdrHost, h.id)
	m.Header.Set(hdrLocal, "1")
	m.Header.Set(hdrPinLost, "1")
	m.Data = trimNL(jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: msg}))
	h.publish(m)
}

// memberPins is a host's pins of one pool: key → the member's
// connection the key's calls go to.
type memberPins struct {
	mu    sync.Mutex
	m     map[string]*memberPin
	turn  uint64    // the next member in turn for a new pin
	swept time.Time // the last sweep of idle keys
}

type memberPin struct {
	conn *snodo.Client
	last time.Time // when a call last used it
}

// get is the connection key is pinned to (its use noted), or nil when
// the key is unknown here or idled out.
func (t *memberPins) get(key string, now time.Time) *snodo.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[key]
	if e == nil {
		return nil
	}
	if now.Sub(e.last) > pinIdle {
		delete(t.m, key)
		return nil
	}
	e.last = now
	return e.conn
}

// put pins key to conn. The keys idle past pinIdle go at most every
// pinSweep, and at maxPins; still full, the one idle longest goes.
func (t *memberPins) put(key string, conn *snodo.Client, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*memberPin{}
	}
	if now.Sub(t.swept) > pinSweep {
		t.swept = now
		for k, e := range t.m {
			if now.Sub(e.last) > pinIdle {
				delete(t.m, k)
			}
		}
	}
	if _, ok := t.m[key]; !ok && len(t.m) >= maxPins {
		oldest, at := "", now
		for k, e := range t.m {
			if now.Sub(e.last) > pinIdle {
				delete(t.m, k)
			} else if e.last.Before(at) {
				oldest, at = k, e.last
			}
		}
		if len(t.m) >= maxPins {
			delete(t.m, oldest)
		}
	}
	t.m[key] = &memberPin{conn: conn, last: now}
}

// len is the number of keys kept.
func (t *memberPins) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// pinned is the member's connection a call of key goes to on pool p:
// for the call that makes the pin (isNew), a member chosen in turn among
// those up (or the first to come up, while ctx lasts), kept for the key;
// for a later call, the one kept, or an error that wraps pin.ErrLost
// when that member has stopped or the key is unknown here.
func (l *legacySide) pinned(ctx context.Context, p *supervisor.Pool, key string, isNew bool) (*snodo.Client, error) {
	now := time.Now()
	if !isNew {
		conn := l.pins.get(key, now)
		if conn == nil {
			return nil, pinLostErr(fmt.Sprintf("host %s does not know this session's server of %s (a key idle for %v is forgotten, and past %d keys the one idle longest): the session must start again",
				l.h.label, l.s.name, pinIdle, maxPins))
		}
		select {
		case <-conn.Done():
			return nil, pinLostErr(fmt.Sprintf("host %s: the server of %s this session was pinned to has stopped (%v): the session's state went with it",
				l.h.label, l.s.name, conn.Err()))
		default:
		}
		return conn, nil
	}
	var conn *snodo.Client
	ms := p.Members()
	l.pins.mu.Lock()
	l.pins.turn++
	turn := l.pins.turn
	l.pins.mu.Unlock()
	for i := range ms {
		m := ms[(int(turn%uint64(len(ms)))+i)%len(ms)]
		if c := m.Current(); c != nil && c.Err() == nil {
			conn = c
			break
		}
	}
	if conn == nil {
		c, err := p.Await(ctx)
		if err != nil {
			return nil, err
		}
		conn = c
	}
	l.pins.put(key, conn, now)
	return conn, nil
}
