package snodo

import (
	"runtime"
	"sync"
	"weak"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/seam"
)

// The Origin of a call message's reply when the actor it was sent to has
// stopped: answerDeadCalls answers it from the dead letters, which carry
// only the actor's PID. The supervisor package names its actors here as
// it spawns them (seam.NameDeadCalls), and Connect a client given an
// Origin (WithOrigin; a supervisor's members are), so that those replies
// carry the same Origin as the actor's live ones (issue 39: they carried
// none).

// deadKey is an actor of one system.
type deadKey struct {
	sys weak.Pointer[protoactor.ActorSystem] // weak: a dropped system is collected
	id  string
}

// deadOrigins holds the Origin of each named actor, until its PID (the
// one Spawn returned, which its owner keeps while anyone may send to it)
// is collected.
var deadOrigins sync.Map // deadKey → Origin

// nameDeadCalls records o (a snodo.Origin) as pid's, in sys.
func nameDeadCalls(sys *protoactor.ActorSystem, pid *protoactor.PID, o any) {
	origin, ok := o.(Origin)
	if sys == nil || pid == nil || !ok || origin == (Origin{}) {
		return // nothing to name it by: its replies carry none, live or not
	}
	key := deadKey{weak.Make(sys), pid.Id}
	deadOrigins.Store(key, origin)
	runtime.AddCleanup(pid, func(k deadKey) { deadOrigins.Delete(k) }, key)
}

// deadOrigin is the Origin recorded for pid in sys, if any.
func deadOrigin(sys *protoactor.ActorSystem, pid *protoactor.PID) Origin {
	if pid == nil {
		return Origin{}
	}
	o, _ := deadOrigins.Load(deadKey{weak.Make(sys), pid.Id})
	origin, _ := o.(Origin)
	return origin
}

func init() { seam.NameDeadCalls = nameDeadCalls }
