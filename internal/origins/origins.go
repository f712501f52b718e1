// Package origins holds snodo.Origin's type and the record of the
// Origin each named actor's replies carry once it has stopped, so that
// the root package (which answers calls sent to a stopped actor from the
// dead letters, which carry only a PID) and package supervisor (which
// names its actors as it spawns them) share them with real types. (leaf)
package origins

import (
	"runtime"
	"sync"
	"weak"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Origin says which server a message snodo sends to an actor comes from:
// every reply, progress update, notification, subscription event and end,
// and lifecycle message carries one, so an actor fed by several servers
// can tell them apart. It is snodo.Origin.
type Origin struct {
	// Server is the server's name: WithOrigin's (for a supervisor, given
	// in supervisor.WithConnectOptions; default: the command; a servers
	// file gives each its name), empty for a plain client without it.
	Server string
	// Member is the supervised client that served it: for a pool, the
	// member ("NAME#N"); for a supervised client, its name, the same as
	// Server; empty for a plain client without WithOrigin. It is the
	// supervisor.LifecycleEvent's Member and supervisor.Client.Origin's;
	// a supervised subscription's events name the member holding it now.
	Member string
}

// deadKey is an actor of one system.
type deadKey struct {
	sys weak.Pointer[protoactor.ActorSystem] // weak: a dropped system is collected
	id  string
}

// dead holds the Origin of each named actor, until its PID (the one
// Spawn returned, which its owner keeps while anyone may send to it) is
// collected: bounded by the live PIDs.
var dead sync.Map // deadKey → Origin

// Name records o as the Origin of pid's replies in sys once pid has
// stopped. An empty o records nothing.
func Name(sys *protoactor.ActorSystem, pid *protoactor.PID, o Origin) {
	if sys == nil || pid == nil || o == (Origin{}) {
		return // nothing to name it by: its replies carry none, live or not
	}
	key := deadKey{weak.Make(sys), pid.Id}
	dead.Store(key, o)
	runtime.AddCleanup(pid, func(k deadKey) { dead.Delete(k) }, key)
}

// Dead is the Origin recorded for pid in sys, empty if none.
func Dead(sys *protoactor.ActorSystem, pid *protoactor.PID) Origin {
	if pid == nil {
		return Origin{}
	}
	o, _ := dead.Load(deadKey{weak.Make(sys), pid.Id})
	origin, _ := o.(Origin)
	return origin
}
