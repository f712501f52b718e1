// Package pin keeps one caller session's calls on one server across NATS.
//
// The gateway serves a legacy client's session on one MCP server process
// while that process lives: a stateful legacy server (its resource
// subscriptions, the context of its sampling or elicitation requests,
// whatever it keeps between calls) must see all of one client's calls.
// For a name served over NATS the server is two hops away: a host among
// those serving the name, then a member of that host's legacy-era pool.
// A Pin is the session's side of it: the gateway makes one per session
// and puts it in the ctx of each call it forwards (With); the remote
// client (package remote) reads it (From), sends the session's first
// call to any host and every later one to the host that ran the first,
// with the pin's key in the call's settings; that host keeps the key on
// the member it chose. When the host or the member is gone the remote
// client marks the pin lost (Lose) and every later call fails at once
// with an error that wraps ErrLost: the gateway ends an HTTP session on
// it (the client initializes again, landing on a live server), and a
// stdio session, which cannot initialize again, starts afresh (Repin).
package pin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
)

// ErrLost is what the calls of a pin fail with once the server holding
// it is gone (or has forgotten it): the session's server-side state went
// with it.
var ErrLost = errors.New("the server this session was pinned to is gone")

// KeyLen is the length of a key: 32 lower-case hex digits.
const KeyLen = 32

// Pin is one session's pin. Its methods are safe for concurrent use.
type Pin struct {
	key string

	mu     sync.Mutex
	gen    uint64        // the pin's generation: Repin starts the next
	holder string        // the host that holds the pin; "" before the first call ran
	making chan struct{} // closed when the call making the pin ends; nil when none is under way
	lost   error         // why the pin was lost; nil while it holds
}

// Ticket is one call's route, from Route: where it goes, and of which
// generation of the pin, so that what it meets (Made, Lose) counts for
// that generation only: a call routed to a server the session has left
// since cannot mark the new one lost.
type Ticket struct {
	// Holder is the host that holds the pin; "" for the call that makes it.
	Holder string
	// First reports that this call makes the pin.
	First  bool
	gen    uint64
	making chan struct{} // First: the channel the calls waiting for it wait on
}

// New is a fresh pin with a random key.
func New() *Pin {
	var b [KeyLen / 2]byte
	_, _ = rand.Read(b[:])
	return &Pin{key: hex.EncodeToString(b[:])}
}

// Key is the pin's key, as it travels in a call's settings.
func (p *Pin) Key() string { return p.key }

// ValidKey reports whether k is a key as New makes them.
func ValidKey(k string) bool {
	if len(k) != KeyLen {
		return false
	}
	for i := range len(k) {
		if c := k[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

type ctxKey struct{}

// With is ctx carrying p for the calls made with it.
func With(ctx context.Context, p *Pin) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// From is the pin ctx carries, or nil.
func From(ctx context.Context) *Pin {
	p, _ := ctx.Value(ctxKey{}).(*Pin)
	return p
}

// Route tells a call about to be sent where it goes: to Holder, or, for
// the call that makes the pin (First), to whichever host takes it; that
// call calls Made once it knows its host, and at its end. A call made
// while another makes the pin waits for that one (Made), at most while
// ctx lasts. Once the pin is lost, Route returns the error it was lost
// with (errors.Is ErrLost).
func (p *Pin) Route(ctx context.Context) (Ticket, error) {
	for {
		p.mu.Lock()
		switch {
		case p.lost != nil:
			err := p.lost
			p.mu.Unlock()
			return Ticket{}, err
		case p.holder != "":
			t := Ticket{Holder: p.holder, gen: p.gen}
			p.mu.Unlock()
			return t, nil
		case p.making == nil:
			p.making = make(chan struct{})
			t := Ticket{First: true, gen: p.gen, making: p.making}
			p.mu.Unlock()
			return t, nil
		}
		making := p.making
		p.mu.Unlock()
		select {
		case <-making:
		case <-ctx.Done():
			return Ticket{}, ctx.Err()
		}
	}
}

// Made tells the pin where the call that makes it (t.First) went: holder
// is the host that kept it, "" when none did (the next call makes the
// pin then). The calls waiting for it go on. Called again, it changes
// nothing.
func (p *Pin) Made(t Ticket, holder string) {
	if !t.First {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.gen == p.gen && p.lost == nil && p.holder == "" {
		p.holder = holder
	}
	if p.making == t.making && p.making != nil {
		close(p.making)
		p.making = nil
	}
}

// Lose marks the pin lost, when t is of its current generation: why says
// what went (it is wrapped with ErrLost when it does not wrap it
// already). Every later Route returns it.
func (p *Pin) Lose(t Ticket, why error) {
	if !errors.Is(why, ErrLost) {
		why = fmt.Errorf("%w: %w", ErrLost, why)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.gen == p.gen && p.lost == nil {
		p.lost = why
	}
}

// Repin forgets a lost pin's server: the next call makes the pin again,
// on whichever server it reaches (a new generation). A pin that is not
// lost (another call made it again already) stays as it is.
func (p *Pin) Repin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost != nil {
		p.lost, p.holder = nil, ""
		p.gen++
	}
}
