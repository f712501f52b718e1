package testutil

import (
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
)

// StopActor stops pid on sys and waits until it has terminated, failing
// tb if that takes longer than within. It waits on a watch (the
// actor's Terminated), not on a protoactor Future: futures race under
// -race.
func StopActor(tb testing.TB, sys *protoactor.ActorSystem, pid *protoactor.PID, within time.Duration) {
	tb.Helper()
	gone := make(chan struct{})
	stopWatch := snodoactor.WatchOwner(sys, pid, func() { close(gone) })
	defer stopWatch()
	sys.Root.Stop(pid)
	select {
	case <-gone:
	case <-time.After(within):
		tb.Fatalf("actor %s did not terminate within %s", pid.Id, within)
	}
}
