package actor_test

import (
	"fmt"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
)

// TestQuietSystemRegistry: the system's compacted process registry still
// holds what protoactor-go registered while making it (its event stream,
// dead letters, guardians), and actors spawned, reached and stopped in
// numbers find and leave it as before.
func TestQuietSystemRegistry(t *testing.T) {
	sys := snodoactor.NewQuietSystem(nil)
	defer sys.Shutdown()
	require.LessOrEqual(t, len(sys.ProcessRegistry.LocalPIDs.LocalPIDs), 16, "the registry is not compacted")
	for _, id := range []string{"eventstream", "deadletter"} {
		_, ok := sys.ProcessRegistry.GetLocal(id)
		require.True(t, ok, "%s is not registered", id)
	}
	const n = 200
	got := make(chan int, n)
	stopped := make(chan struct{}, n)
	pids := make([]*protoactor.PID, n)
	for i := range n {
		pids[i] = sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
			switch v := ctx.Message().(type) {
			case int:
				got <- v
			case *protoactor.Stopped: // sent after the registry let it go
				stopped <- struct{}{}
			}
		}))
	}
	for i, pid := range pids {
		_, ok := sys.ProcessRegistry.Get(protoactor.NewPID(pid.Address, pid.Id))
		require.True(t, ok, "actor %d is not registered", i)
		sys.Root.Send(pid, i)
	}
	seen := make(map[int]bool, n)
	for range n {
		select {
		case v := <-got:
			seen[v] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d actors got their message", len(seen), n)
		}
	}
	require.Len(t, seen, n)
	for _, pid := range pids {
		sys.Root.Stop(pid)
	}
	for i := range n {
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d actors stopped", i, n)
		}
	}
	for i, pid := range pids {
		_, ok := sys.ProcessRegistry.Get(protoactor.NewPID(pid.Address, pid.Id))
		require.False(t, ok, fmt.Sprintf("actor %d is still registered after its stop", i))
	}
}
