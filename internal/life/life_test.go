package life_test

import (
	"context"
	"errors"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/exitsig"
	"github.com/snodo/snodo/internal/life"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// panics makes the test actor panic.
type panics struct{}

// owned spawns an actor under l; the channel receives the reason its
// Stopping saw.
func owned(t *testing.T, l *life.Life) (*protoactor.PID, <-chan error) {
	t.Helper()
	stopped := make(chan error, 1)
	pid := l.Spawn(snodoactor.Shared(), "life-test", func(ctx protoactor.Context) {
		switch ctx.Message().(type) {
		case panics:
			panic("boom")
		case *protoactor.Stopping:
			stopped <- l.Reason()
		}
	})
	return pid, stopped
}

func reasonOf(t *testing.T, stopped <-chan error) error {
	t.Helper()
	select {
	case err := <-stopped:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the actor did not stop")
		return nil
	}
}

func TestLifeFirstReasonWins(t *testing.T) {
	var l life.Life
	_, stopped := owned(t, &l)
	first, second := errors.New("first"), errors.New("second")
	l.Stop(first)
	l.Stop(second)
	if err := reasonOf(t, stopped); err != first {
		t.Fatalf("reason %v, want %v", err, first)
	}
}

func TestLifeExitSignalAndPlainStop(t *testing.T) {
	var l life.Life
	pid, stopped := owned(t, &l)
	reason := errors.New("told to")
	exitsig.Send(snodoactor.Shared(), pid, reason)
	if err := reasonOf(t, stopped); err != reason {
		t.Fatalf("reason %v, want %v", err, reason)
	}

	var plain life.Life
	pid, stopped = owned(t, &plain)
	snodoactor.Shared().Root.Stop(pid)
	if err := reasonOf(t, stopped); !errors.Is(err, sentinel.ErrActorStopped) {
		t.Fatalf("reason %v, want ErrStopped", err)
	}
}

func TestLifePanicStopsWithReasonAndLogs(t *testing.T) {
	logs := &testutil.LogRecorder{}
	l := life.Life{Name: "test", Logger: logs.Logger()}
	pid, stopped := owned(t, &l)
	snodoactor.Shared().Root.Send(pid, panics{})
	if err := reasonOf(t, stopped); !errors.Is(err, sentinel.ErrActorPanicked) {
		t.Fatalf("reason %v, want ErrPanicked", err)
	}
	if !logs.Has("snodo: test actor panicked; stopping it panic=boom") {
		t.Fatal("the panic was not logged")
	}
}

func TestLifeOwnerActorAndOwnerContext(t *testing.T) {
	sys := snodoactor.Shared()
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	l := life.Life{Owner: owner}
	_, stopped := owned(t, &l)
	testutil.StopActor(t, sys, owner, 10*time.Second)
	if err := reasonOf(t, stopped); !errors.Is(err, sentinel.ErrOwnerExited) {
		t.Fatalf("reason %v, want ErrOwnerExited", err)
	}

	var byCtx life.Life
	_, stopped = owned(t, &byCtx)
	ctx, cancel := context.WithCancelCause(context.Background())
	byCtx.LinkContext(ctx)
	gone := errors.New("owner gone")
	cancel(gone)
	if err := reasonOf(t, stopped); !errors.Is(err, sentinel.ErrOwnerExited) || !errors.Is(err, gone) {
		t.Fatalf("reason %v, want ErrOwnerExited wrapping the cause", err)
	}
}

func TestLifeLinkContextAfterTheStop(t *testing.T) {
	var l life.Life
	_, stopped := owned(t, &l)
	l.Stop(errors.New("early"))
	reasonOf(t, stopped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.LinkContext(ctx) // released at once: nothing is left to watch for
	cancel()
	if err := l.Reason(); err == nil || err.Error() != "early" {
		t.Fatalf("reason %v, want the first one", err)
	}
}

// lateMessage is a message queued behind the stop.
type lateMessage struct{ n int }

// Messages still in the mailbox when the actor stops become dead letters
// (protoactor-go alone drops them without a trace).
func TestLifeMailBehindTheStopIsDeadLetters(t *testing.T) {
	sys := snodoactor.NewQuietSystem(nil)
	dead := make(chan int, 16)
	sub := sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*protoactor.DeadLetterEvent); ok {
			if m, ok := dl.Message.(*lateMessage); ok {
				dead <- m.n
			}
		}
	})
	defer sys.EventStream.Unsubscribe(sub)
	busy, release := make(chan struct{}), make(chan struct{})
	var l life.Life
	pid := l.Spawn(sys, "life-test", func(ctx protoactor.Context) {
		if m, ok := ctx.Message().(*lateMessage); ok && m.n == 0 {
			close(busy)
			<-release // the others queue up behind this one
		}
	})
	sys.Root.Send(pid, &lateMessage{0})
	<-busy
	for n := 1; n < 5; n++ {
		sys.Root.Send(pid, &lateMessage{n})
	}
	l.Stop(errors.New("test"))
	close(release)
	for want := 1; want < 5; want++ {
		select {
		case n := <-dead:
			if n != want {
				t.Fatalf("dead letter %d, want %d", n, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d, queued behind the stop, was dropped without a dead letter", want)
		}
	}
}

// Exit with no system or no actor sends nothing and does not panic; nor
// does a Life stopped before its Spawn (it only records the reason).
func TestExitNil(t *testing.T) {
	exitsig.Send(nil, nil, nil)
	exitsig.Send(snodoactor.Shared(), nil, errors.New("x"))
	var l life.Life
	reason := errors.New("early")
	l.Stop(reason)
	if !errors.Is(l.Reason(), reason) {
		t.Fatalf("reason %v, want %v", l.Reason(), reason)
	}
}
