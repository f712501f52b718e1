package ownercheck

import (
	"strings"
	"testing"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Check with no system to look in fails with an error saying what to
// pass, instead of panicking; with no owner there is nothing to check.
func TestCheckWithoutASystem(t *testing.T) {
	owner := &protoactor.PID{Address: "nonhost", Id: "owner"}
	err := Check(nil, owner, "connection")
	if err == nil || !strings.Contains(err.Error(), "nil actor system") || !strings.Contains(err.Error(), "WithActorSystem") {
		t.Fatalf("Check(nil, owner) = %v, want an error naming the nil system and WithActorSystem", err)
	}
	if err := Check(nil, nil, "connection"); err != nil {
		t.Fatalf("Check(nil, nil) = %v, want nil", err)
	}
}
