// Package ownercheck is the check every constructor that takes an owner
// actor (snodo.WithOwner, for a connection or a supervisor, servers.StartRouter) makes
// before it starts anything: the owner must be alive in the actor system
// what it owns will run on.
package ownercheck

import (
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Check says, before anything starts, whether owner can own something
// that runs on system: it must be alive there. An actor of another
// system can never be watched from system (what it owned would stop at
// once as if the owner had exited), so the error names that mistake and
// what to do; what is the thing to be owned ("connection",
// "supervisor", …). A nil owner is fine; a nil system with an owner is
// an error.
func Check(system *protoactor.ActorSystem, owner *protoactor.PID, what string) error {
	if owner == nil {
		return nil
	}
	if system == nil {
		return fmt.Errorf("WithOwner: nil actor system to find actor %s in; pass the system the owner runs on (WithActorSystem; snodo's default is actor.Shared())", owner.Id)
	}
	if _, ok := system.ProcessRegistry.Get(owner); !ok {
		return fmt.Errorf("WithOwner: actor %s is not alive in the %s's actor system; if it belongs to another system, pass that system with WithActorSystem (if it has stopped, nobody is left to own the %s)", owner.Id, what, what)
	}
	return nil
}
