package testutil

import (
	"strings"
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

// Actors counts the processes registered in sys whose id starts with
// prefix ("" for all: actors, futures…), to check that actors started
// for a while (watchers, say) are gone again.
func Actors(sys *protoactor.ActorSystem, prefix string) int {
	n := 0
	for _, bucket := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		for _, id := range bucket.Keys() {
			if strings.HasPrefix(id, prefix) {
				n++
			}
		}
	}
	return n
}
