package remote

import (
	"sync"
	"sync/atomic"
	"time"
)

// deadlines is one timer for every call a client has in flight: it fires
// at the soonest of their deadlines (each call's timeout, its
// MaxTotalTimeout and the end of its host's allowed silence, whichever
// comes first) and ticks the calls whose deadline has come; each call
// then sees which of its deadlines passed, and sets its next one.
//
// A timer per call, set as the call began and stopped as it ended, woke
// another thread of the process on most calls: the Go runtime wakes its
// network poller whenever a timer comes first on its processor, and a
// call's timer did as soon as the last call's was gone. One shared timer
// is set only when a call's deadline comes before the one it is set
// for: calls one after another, with the same timeout, set it once per
// timeout, not once per call. The same design as a connection's
// deadline table (package connection).
type deadlines struct {
	mu    sync.Mutex   // serialises setting the timer, and fire
	timer *time.Timer  // nil until the first deadline
	at    atomic.Int64 // when it fires, unix nanoseconds; 0: not set
	off   bool         // the client closed: never set again; guarded by mu
}

// due makes p's deadline at (unix nanoseconds) and sets the timer for
// it, unless it is set for sooner already.
func (c *Client) due(p *pending, at int64) {
	p.due.Store(at)
	d := &c.deadlines
	if cur := d.at.Load(); cur != 0 && cur <= at {
		return
	}
	d.mu.Lock()
	if cur := d.at.Load(); !d.off && (cur == 0 || at < cur) {
		d.set(at, c.fireDeadlines)
	}
	d.mu.Unlock()
}

// set makes the timer fire at at. d.mu is held.
func (d *deadlines) set(at int64, fire func()) {
	wait := time.Duration(at - time.Now().UnixNano())
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, fire)
	} else {
		d.timer.Reset(wait)
	}
	d.at.Store(at)
}

// stop stops the timer for good (Close).
func (d *deadlines) stop() {
	d.mu.Lock()
	d.off = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.at.Store(0)
	d.mu.Unlock()
}

// fireDeadlines runs on the timer: it ticks every call whose deadline
// has come (once: its deadline is cleared until it sets the next) and
// sets the timer for the soonest deadline still ahead. A call that sets
// an earlier one meanwhile sets the timer itself once this is done.
func (c *Client) fireDeadlines() {
	d := &c.deadlines
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return
	}
	d.at.Store(0)
	now := time.Now().UnixNano()
	var next int64
	c.mu.Lock()
	for _, p := range c.calls {
		at := p.due.Load()
		switch {
		case at == 0:
		case at <= now && p.due.CompareAndSwap(at, 0):
			select {
			case p.tick <- struct{}{}:
			default: // ticked already, not yet seen
			}
		case at > now && (next == 0 || at < next):
			next = at
		}
	}
	c.mu.Unlock()
	if next != 0 {
		d.set(next, c.fireDeadlines)
	}
}
