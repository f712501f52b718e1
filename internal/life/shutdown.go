package life

import (
	"fmt"
	"sync"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/sentinel"
)

// protoactor-go's ActorSystem.Shutdown only closes a channel it keeps to
// itself: its actors run on, and so would the servers snodo's actors own.
// So each Life spawned on a system other than Shared is registered here,
// and one goroutine per such system, living while any is registered,
// looks at IsStopped every shutdownPoll and stops them all once it holds,
// as if their owner had exited (supervision ends; servers are closed).

// shutdownPoll is how often a system with snodo actors on it is checked
// for Shutdown: the delay between Shutdown and the first stop.
const shutdownPoll = 50 * time.Millisecond

// systemWatches is the registry: per system, its live Lives and the
// goroutine's wake-up (closed when the last one leaves).
var systemWatches = struct {
	mu sync.Mutex
	m  map[*protoactor.ActorSystem]*systemWatch
}{m: map[*protoactor.ActorSystem]*systemWatch{}}

type systemWatch struct {
	lives map[*Life]struct{}
	empty chan struct{}
}

// watchShutdown registers l, spawned on system: it is stopped when the
// system is shut down. unwatchShutdown takes it out again.
func watchShutdown(system *protoactor.ActorSystem, l *Life) {
	if system == snodoactor.Shared() {
		return // snodo's own: nobody shuts it down
	}
	systemWatches.mu.Lock()
	defer systemWatches.mu.Unlock()
	w := systemWatches.m[system]
	if w == nil {
		w = &systemWatch{lives: map[*Life]struct{}{}, empty: make(chan struct{})}
		systemWatches.m[system] = w
		go w.run(system)
	}
	w.lives[l] = struct{}{}
}

func unwatchShutdown(system *protoactor.ActorSystem, l *Life) {
	systemWatches.mu.Lock()
	defer systemWatches.mu.Unlock()
	w := systemWatches.m[system]
	if w == nil {
		return
	}
	delete(w.lives, l)
	if len(w.lives) == 0 {
		delete(systemWatches.m, system)
		close(w.empty)
	}
}

// run waits for the system's Shutdown, or for its last Life to leave.
func (w *systemWatch) run(system *protoactor.ActorSystem) {
	tick := time.NewTicker(shutdownPoll)
	defer tick.Stop()
	for {
		select {
		case <-w.empty:
			return
		case <-tick.C:
			if !system.IsStopped() {
				continue
			}
			systemWatches.mu.Lock()
			lives := make([]*Life, 0, len(w.lives))
			for l := range w.lives {
				lives = append(lives, l)
			}
			systemWatches.mu.Unlock()
			reason := fmt.Errorf("%w: actor system %s was shut down", sentinel.ErrOwnerExited, system.ID)
			for _, l := range lives {
				l.Stop(reason)
			}
			// The stopped Lives leave as they stop; the last one closes
			// empty. A Life spawned after Shutdown is stopped on the
			// next tick.
		}
	}
}
