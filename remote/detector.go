package remote

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Telling a late host from a dead one.
//
// A host sends each call and subscription it holds a heartbeat every
// beat. A caller that hears nothing for a while suspects the host; when it suspects it
// depends on what it has seen of that host's beats, as in a phi accrual
// detector (Hayashibara et al.; Akka, Cassandra): the gaps between
// consecutive beats of the host's calls and subscriptions are kept, and the host is
// suspected once the silence is as unlikely as 1 in 10^8 under a normal
// law of those gaps, but never before 2 beats nor after 3.5 beats.
//
// A suspicion is not a verdict. The caller then asks the NATS server
// whether the host's connection still lives: it sends a request to the
// host's control subject, which only that connection subscribes to. "No
// responders" means the server holds no connection of the host (killed,
// or its connection lost): its calls fail at once with ErrHostGone, so a
// killed host is still found within 2 s at the default beat. A reply, or
// no answer at all while the server still holds the subscription, means
// the host lives but is late (a starved machine): its calls and
// subscriptions go on, asked again every beat, up to hostSilenceCap.

const (
	// phiZ is the number of standard deviations above the mean gap at
	// which phi reaches 8 (1 - Φ(z) = 1e-8).
	phiZ = 5.612
	// beatGaps is how many gaps between beats are kept per host.
	beatGaps = 64
	// minSuspectBeats is the fewest beats of silence before a host is
	// suspected (missedBeats and a half, the most).
	minSuspectBeats = 2
	// hostsRefresh is the least time between two asks of learnHosts.
	hostsRefresh = 5 * time.Second
	// maxWatched bounds the hosts a client keeps a watch on: the least
	// recently heard one is forgotten first.
	maxWatched = 256
)

// hostSilenceCap is the longest a caller waits for a host that sends
// nothing while NATS still holds its connection (late, not dead): 20
// beats, and at least 10 s.
func hostSilenceCap(beat time.Duration) time.Duration { return max(20*beat, 10*time.Second) }

// probeWait bounds one liveness probe: a beat, at most 2 s.
func probeWait(beat time.Duration) time.Duration { return min(beat, 2*time.Second) }

// hostWatch is what a client knows of one host's liveness.
type hostWatch struct {
	id   string
	gone chan struct{} // closed once NATS holds no connection of the host

	mu      sync.Mutex
	gaps    [beatGaps]float64 // seconds between consecutive beats of one call; a ring
	n, next int
	heard   time.Time // when the host last sent anything
	probing bool      // a probe is out
	isGone  bool
}

// addGap records the gap between two consecutive beats of one call.
func (w *hostWatch) addGap(d time.Duration, now time.Time) {
	w.mu.Lock()
	w.gaps[w.next] = d.Seconds()
	w.next = (w.next + 1) % beatGaps
	w.n = min(w.n+1, beatGaps)
	w.heard = now
	w.mu.Unlock()
}

// suspectAfter is how long a silence from the host may last before it is
// suspected: where phi reaches 8 over the gaps seen, within 2 to 3.5
// beats. With fewer than 4 gaps seen, or the host not known yet (w nil),
// 3 beats: a host sends a call's first beat a beat after it takes it.
func (w *hostWatch) suspectAfter(beat time.Duration) time.Duration {
	hi := time.Duration(missedBeats)*beat + beat/2
	if w == nil {
		return missedBeats * beat
	}
	w.mu.Lock()
	n := w.n
	var sum, sq float64
	for _, g := range w.gaps[:n] {
		sum += g
		sq += g * g
	}
	w.mu.Unlock()
	if n < 4 {
		return missedBeats * beat
	}
	mean := sum / float64(n)
	sd := math.Sqrt(max(sq/float64(n)-mean*mean, 0))
	sd = max(sd, beat.Seconds()/8) // a floor, as Akka's min-std-deviation: a steady host is not suspected at once
	at := time.Duration((mean + phiZ*sd) * float64(time.Second))
	return min(max(at, minSuspectBeats*beat), hi)
}

// watchFor returns the watch on host id, making it.
func (c *Client) watchFor(id string) *hostWatch {
	if id == "" {
		return nil
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if w := c.watched[id]; w != nil {
		return w
	}
	if len(c.watched) >= maxWatched {
		var oldest *hostWatch
		for _, w := range c.watched {
			w.mu.Lock()
			if oldest == nil || w.heard.Before(oldest.heard) {
				oldest = w
			}
			w.mu.Unlock()
		}
		delete(c.watched, oldest.id)
	}
	w := &hostWatch{id: id, gone: make(chan struct{}), heard: time.Now()}
	c.watched[id] = w
	return w
}

// anyGone is closed when the next host is found gone: calls that have
// not yet heard which host holds them wait on it.
func (c *Client) anyGone() <-chan struct{} { return *c.goneNext.Load() }

// suspect probes w's host, or every watched host when w is nil (a call
// that has not heard from its host yet), unless a probe is already out.
// It never waits: a host found gone closes its gone channel and
// anyGone's.
func (c *Client) suspect(w *hostWatch) {
	ws := []*hostWatch{w}
	if w == nil {
		c.watchMu.Lock()
		ws = ws[:0]
		for _, w := range c.watched {
			ws = append(ws, w)
		}
		c.watchMu.Unlock()
	}
	for _, w := range ws {
		w.mu.Lock()
		if w.probing || w.isGone {
			w.mu.Unlock()
			continue
		}
		w.probing = true
		w.mu.Unlock()
		if !c.goProbe(func() { c.probe(w) }) {
			return
		}
	}
}

// goProbe runs f on a goroutine of its own that Close waits for, unless
// Close has begun.
func (c *Client) goProbe(f func()) bool {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.probesOff {
		return false
	}
	c.probes.Go(f)
	return true
}

// learnHosts asks the name's hosts for their ids, at most once per
// hostsRefresh, on a goroutine of its own: a call that has not heard
// from its host yet can only suspect the hosts the client knows. Their
// answers also say whether they all read a call's settings in its
// payload (envOpts).
func (c *Client) learnHosts(now time.Time) {
	last := c.hostsAt.Load()
	if now.UnixNano()-last < int64(hostsRefresh) || !c.hostsAt.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	c.goProbe(func() {
		hosts := c.askHosts(c.probeCtx)
		all := len(hosts) > 0
		for _, h := range hosts {
			c.watchFor(h.ID)
			all = all && h.Opts
		}
		c.envOpts.Store(all) // the settings in the payload only while every host reads them there
	})
}

// probe asks NATS whether w's host's connection lives (see above).
func (c *Client) probe(w *hostWatch) {
	ctx, cancel := context.WithTimeout(c.probeCtx, probeWait(c.cfg.beat))
	defer cancel()
	m := &nats.Msg{Subject: controlSubject(c.cfg.prefix, w.id), Header: nats.Header{hdrOp: []string{opPing}}}
	_, err := c.nc.RequestMsgWithContext(ctx, m)
	gone := errors.Is(err, nats.ErrNoResponders)
	w.mu.Lock()
	w.probing = false
	if err == nil {
		w.heard = time.Now()
	}
	if gone && !w.isGone {
		w.isGone = true
		close(w.gone)
	}
	w.mu.Unlock()
	if gone {
		c.goneAt.Store(time.Now().UnixNano())
		c.watchMu.Lock()
		delete(c.watched, w.id)
		close(*c.goneNext.Swap(new(make(chan struct{}))))
		c.watchMu.Unlock()
		c.cfg.logger.Debug("remote: a silent host is gone: NATS holds no connection of it", "server", c.name, "host", w.id)
	}
}

// hostGoneErr is the error of a call whose host was found gone.
func (c *Client) hostGoneErr(method string, silence time.Duration) error {
	return closedErr(fmt.Sprintf("%s on %s: the host running it is gone (NATS holds no connection of it; silent for %s)",
		method, c.name, silence.Round(time.Millisecond)), ErrHostGone)
}
