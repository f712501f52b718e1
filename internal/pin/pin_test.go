package pin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

func TestKeys(t *testing.T) {
	a, b := New(), New()
	if !ValidKey(a.Key()) || !ValidKey(b.Key()) || a.Key() == b.Key() {
		t.Fatalf("keys %q %q: want two valid, different keys", a.Key(), b.Key())
	}
	for _, k := range []string{"", "ABCDEF0123456789abcdef0123456789", "abc", a.Key() + "0", "g" + a.Key()[1:]} {
		if ValidKey(k) {
			t.Errorf("ValidKey(%q) = true", k)
		}
	}
	if From(context.Background()) != nil || From(With(context.Background(), a)) != a {
		t.Fatal("With/From do not carry the pin")
	}
}

type routed struct {
	t   Ticket
	err error
}

// route runs p.Route on a goroutine of its own.
func route(ctx context.Context, p *Pin) chan routed {
	out := make(chan routed, 1)
	go func() {
		t, err := p.Route(ctx)
		out <- routed{t, err}
	}()
	return out
}

func receive(t *testing.T, ch chan routed) routed {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Route did not return")
	}
	return routed{}
}

// The first call makes the pin; calls made meanwhile wait for it, then
// go to its holder; a first call that ran nowhere lets the next make it.
func TestRouteWaitsForTheFirstCall(t *testing.T) {
	p := New()
	first, err := p.Route(t.Context())
	if !first.First || err != nil {
		t.Fatalf("first Route: %+v, err %v", first, err)
	}
	waiter := route(t.Context(), p)
	select {
	case r := <-waiter:
		t.Fatalf("a call went on while the pin was being made: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
	p.Made(first, "")
	second := receive(t, waiter)
	if !second.t.First {
		t.Fatalf("after a first call that ran nowhere, the next makes the pin: %+v", second)
	}
	waiter = route(t.Context(), p)
	p.Made(second.t, "host1")
	p.Made(second.t, "host2") // again: nothing changes
	if r := receive(t, waiter); r.t.Holder != "host1" || r.t.First || r.err != nil {
		t.Fatalf("after the pin was made: %+v, want host1", r)
	}
	if r, err := p.Route(t.Context()); r.Holder != "host1" || r.First || err != nil {
		t.Fatalf("later call: %+v %v", r, err)
	}
}

// A call waiting for the first one gives up with its ctx.
func TestRouteWaitEndsWithCtx(t *testing.T) {
	p := New()
	first, _ := p.Route(t.Context())
	ctx, cancel := context.WithCancel(t.Context())
	waiter := route(ctx, p)
	cancel()
	if r := receive(t, waiter); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %+v, want context.Canceled", r)
	}
	p.Made(first, "h")
}

// A lost pin fails every call with the error it was lost with, until
// Repin: the next call then makes it again. A call routed before the
// Repin (to the server the session left) cannot mark the new pin lost.
func TestLoseAndRepin(t *testing.T) {
	p := New()
	first, _ := p.Route(t.Context())
	p.Made(first, "h1")
	old, _ := p.Route(t.Context())
	why := errors.New("host h1 is gone")
	p.Lose(old, why)
	p.Lose(old, errors.New("a second loss is not kept"))
	for range 2 {
		_, err := p.Route(t.Context())
		if !errors.Is(err, ErrLost) || !errors.Is(err, why) {
			t.Fatalf("Route after Lose: %v, want ErrLost wrapping why", err)
		}
	}
	p.Repin()
	again, err := p.Route(t.Context())
	if again.Holder != "" || !again.First || err != nil {
		t.Fatalf("after Repin: %+v %v, want the next call to make the pin", again, err)
	}
	p.Repin() // not lost: nothing changes
	p.Made(again, "h2")
	p.Lose(old, errors.New("a late loss of h1"))
	if r, err := p.Route(t.Context()); r.Holder != "h2" || err != nil {
		t.Fatalf("after a stale loss: %+v %v, want h2", r, err)
	}
}
