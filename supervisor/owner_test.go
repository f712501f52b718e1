package supervisor

import (
	"testing"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// An owner from another actor system is named as the mistake, as the
// root Connect names it, before any server starts; with its system the
// same owner works.
func TestOwnerFromAnotherSystem(t *testing.T) {
	other := snodoactor.NewQuietSystem(nil)
	t.Cleanup(other.Shutdown)
	owner := other.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	command, args := testutil.Server(t)
	before := testutil.ChildPIDs()

	_, err := Connect(t.Context(), snodo.Command(command, args...), WithConnectOptions(snodo.WithOwner(owner)))
	require.ErrorContains(t, err, "not alive in the supervisor's actor system")
	require.ErrorContains(t, err, "pass that system with")
	require.NotContains(t, err.Error(), "owner exited")

	_, err = NewPool(t.Context(), snodo.Command(command, args...), 1, WithConnectOptions(snodo.WithOwner(owner)))
	require.ErrorContains(t, err, "pass that system with")
	_, err = StartPool(t.Context(), snodoactor.Shared(), owner, snodo.Command(command, args...), 1)
	require.ErrorContains(t, err, "pass that system with")
	require.Subset(t, before, testutil.ChildPIDs(), "nothing may be started")

	c, err := Connect(t.Context(), snodo.Command(command, args...), WithConnectOptions(snodo.WithOwner(owner)), WithConnectOptions(snodo.WithActorSystem(other)))
	require.NoError(t, err)
	require.NoError(t, c.Ping(t.Context()))
	require.NoError(t, c.Close())
	<-c.Done()
}
