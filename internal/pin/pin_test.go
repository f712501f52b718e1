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

// route runs p.Route on a goroutine of its own.
func route(ctx context.Context, p *Pin) chan [3]any {
	out := make(chan [3]any, 1)
	go func() {
		h, first, err := p.Route(ctx)
		out <- [3]any{h, first, err}
	}()
	return out
}

func receive(t *testing.T, ch chan [3]any) [3]any {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Route did not return")
	}
	return [3]any{}
}

// The first call makes the pin; calls made meanwhile wait for it, then
// go to its holder; a first call that ran nowhere lets the next make it.
func TestRouteWaitsForTheFirstCall(t *testing.T) {
	p := New()
	_, first, err := p.Route(t.Context())
	if !first || err != nil {
		t.Fatalf("first Route: first %v, err %v", first, err)
	}
	waiter := route(t.Context(), p)
	select {
	case r := <-waiter:
		t.Fatalf("a call went on while the pin was being made: %v", r)
	case <-time.After(20 * time.Millisecond):
	}
	p.Made("")
	if r := receive(t, waiter); r[1] != true {
		t.Fatalf("after a first call that ran nowhere, the next makes the pin: %v", r)
	}
	waiter = route(t.Context(), p)
	p.Made("host1")
	if r := receive(t, waiter); r[0] != "host1" || r[1] != false || r[2] != nil {
		t.Fatalf("after the pin was made: %v, want host1", r)
	}
	if h, first, err := p.Route(t.Context()); h != "host1" || first || err != nil {
		t.Fatalf("later call: %q %v %v", h, first, err)
	}
}

// A call waiting for the first one gives up with its ctx.
func TestRouteWaitEndsWithCtx(t *testing.T) {
	p := New()
	if _, first, _ := p.Route(t.Context()); !first {
		t.Fatal("want first")
	}
	ctx, cancel := context.WithCancel(t.Context())
	waiter := route(ctx, p)
	cancel()
	if r := receive(t, waiter); !errors.Is(r[2].(error), context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", r)
	}
	p.Made("h")
}

// A lost pin fails every call with the error it was lost with, until
// Repin: the next call then makes it again.
func TestLoseAndRepin(t *testing.T) {
	p := New()
	_, _, _ = p.Route(t.Context())
	p.Made("h1")
	why := errors.New("host h1 is gone")
	p.Lose(why)
	p.Lose(errors.New("a second loss is not kept"))
	for range 2 {
		_, _, err := p.Route(t.Context())
		if !errors.Is(err, ErrLost) || !errors.Is(err, why) {
			t.Fatalf("Route after Lose: %v, want ErrLost wrapping why", err)
		}
	}
	p.Repin()
	if h, first, err := p.Route(t.Context()); h != "" || !first || err != nil {
		t.Fatalf("after Repin: %q %v %v, want the next call to make the pin", h, first, err)
	}
	p.Repin() // not lost: nothing changes
	p.Made("h2")
	if h, _, _ := p.Route(t.Context()); h != "h2" {
		t.Fatalf("holder %q, want h2", h)
	}
}
