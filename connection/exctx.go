package connection

import (
	"context"
	"slices"
	"sync"
	"time"
)

// exchangeCtx is an exchange's context: never done until the exchange is
// aborted (cancel), with no deadline and no values. It lives inside its
// exchange, so making one costs no allocation of its own.
//
// It is not a context.WithCancel because of what net/http does with a
// request's context: every RoundTrip derives one of its own from it and
// cancels that at the end of the exchange. Under a context.WithCancel the
// derived context joins its parent's set of children (a map made for the
// one child, a lock at each end) and leaves it again: about a tenth of
// the transport's own cost per call on a profile at 64 calls in flight.
// A parent with an AfterFunc method is joined through that instead
// (context's afterFuncer): one function kept here and dropped again.
type exchangeCtx struct {
	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error         // context.Canceled once cancelled
	first afterFunc     // the one function AfterFunc registered, as a rule
	more  []*afterFunc  // any others
}

// afterFunc is one function AfterFunc registered; f is nil once it is
// stopped or has run.
type afterFunc struct {
	c *exchangeCtx
	f func()
}

// closedDone is the Done of a context cancelled before Done was asked.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (c *exchangeCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *exchangeCtx) Value(any) any { return nil }

func (c *exchangeCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			return closedDone
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *exchangeCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc has f run once c is cancelled (at once if it is); stop
// unregisters it and reports whether that kept it from running. Only
// package context calls it (its afterFuncer interface is unexported):
// to join c, from context.WithCancel and the like, and for
// context.AfterFunc, whose f it starts on a goroutine of its own. Its
// functions only cancel contexts, so cancel runs them itself, in turn,
// as a context.WithCancel cancels its children.
func (c *exchangeCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		f()
		return func() bool { return false }
	}
	a := &c.first
	if a.c == nil {
		a.c, a.f = c, f // net/http's, once per request: nothing to allocate
	} else {
		a = &afterFunc{c: c, f: f}
		// Those stopped go (a stream resumed again and again registers
		// one per GET).
		c.more = append(slices.DeleteFunc(c.more, func(b *afterFunc) bool { return b.f == nil }), a)
	}
	c.mu.Unlock()
	return a.stop
}

func (a *afterFunc) stop() bool {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.f == nil {
		return false
	}
	a.f = nil
	return true
}

// cancel cancels c: Done closes, Err is context.Canceled, and what
// AfterFunc registered runs. Later calls do nothing.
func (c *exchangeCtx) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	first := c.first.f
	c.first.f = nil
	var more []func()
	for _, a := range c.more {
		if a.f != nil {
			more = append(more, a.f)
			a.f = nil
		}
	}
	c.more = nil
	c.mu.Unlock()
	if first != nil {
		first()
	}
	for _, f := range more {
		f()
	}
}
