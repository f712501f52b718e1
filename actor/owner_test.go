package actor_test

import (
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

func TestWatchOwnerSeesTheOwnerStop(t *testing.T) {
	sys := snodoactor.Shared()
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	exited := make(chan struct{})
	stop := snodoactor.WatchOwner(sys, owner, func() { close(exited) })
	defer stop()
	testutil.StopActor(t, sys, owner, 10*time.Second)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("owner's exit not seen")
	}
}

func TestWatchOwnerAlreadyGone(t *testing.T) {
	sys := snodoactor.Shared()
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	testutil.StopActor(t, sys, owner, 10*time.Second)
	exited := make(chan struct{})
	stop := snodoactor.WatchOwner(sys, owner, func() { close(exited) })
	defer stop()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a dead owner was not reported")
	}
}

func TestWatchOwnerStopEndsTheWatch(t *testing.T) {
	sys := snodoactor.Shared()
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	called := make(chan struct{}, 1)
	stop := snodoactor.WatchOwner(sys, owner, func() { called <- struct{}{} })
	stop() // its Stop is queued before the owner's Terminated can be
	testutil.StopActor(t, sys, owner, 10*time.Second)
	select {
	case <-called:
		t.Fatal("onExit ran after stop")
	case <-time.After(200 * time.Millisecond):
	}
}

// A nil owner is one already gone: onExit runs at once.
func TestWatchOwnerNil(t *testing.T) {
	exited := make(chan struct{})
	stop := snodoactor.WatchOwner(snodoactor.Shared(), nil, func() { close(exited) })
	defer stop()
	testutil.Receive(t, exited, 5*time.Second, "onExit for a nil owner")
}
