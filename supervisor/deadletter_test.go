package supervisor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// snodo's own watches (owner links, pool members, connections) are
// released as its actors stop: on a user's actor system, whose log shows
// dead letters, closing connections, subscriptions, supervised clients
// and pools, and stopping their owner, leaves none.
func TestNoDeadLettersFromSnodosWatches(t *testing.T) {
	rec := &testutil.LogRecorder{}
	sys := snodoactor.NewQuietSystem(rec.Logger())
	var dead []string
	deadc := make(chan string, 64)
	sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*protoactor.DeadLetterEvent); ok {
			if _, quiet := dl.Message.(protoactor.IgnoreDeadLetterLogging); quiet {
				return // a message for an actor that is gone, kept out of the log
			}
			select {
			case deadc <- dl.PID.Id + ": " + protoactorTypeName(dl.Message):
			default:
			}
		}
	})
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	cmd, args := testutil.Server(t)

	c, err := snodo.Connect(t.Context(), cmd, args, snodo.WithActorSystem(sys), snodo.WithOwner(owner))
	require.NoError(t, err)
	sub, err := c.Listen(t.Context(), snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(owner))
	require.NoError(t, err)
	require.NoError(t, sub.Close())
	require.NoError(t, c.Close())
	<-c.Done()

	sc, err := supervisor.Connect(context.Background(), snodo.Command(cmd, args...), supervisor.WithConnectOptions(snodo.WithActorSystem(sys)), supervisor.WithConnectOptions(snodo.WithOwner(owner)))
	require.NoError(t, err)
	require.NoError(t, sc.Close())
	<-sc.Done()

	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 2, supervisor.WithConnectOptions(snodo.WithActorSystem(sys)), supervisor.WithConnectOptions(snodo.WithOwner(owner)))
	require.NoError(t, err)
	require.NoError(t, p.Close())
	<-p.Done()

	// A subscription whose actor stops first.
	c2, err := snodo.Connect(t.Context(), cmd, args, snodo.WithActorSystem(sys))
	require.NoError(t, err)
	listener := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	sub2, err := c2.Listen(t.Context(), snodo.Filter{ToolsListChanged: true}, snodo.ListenTo(listener))
	require.NoError(t, err)
	sys.Root.Stop(listener)
	<-sub2.Done()
	require.NoError(t, c2.Close())
	<-c2.Done()

	// And a pool that ends with its owner.
	p2, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 2, supervisor.WithConnectOptions(snodo.WithActorSystem(sys)), supervisor.WithConnectOptions(snodo.WithOwner(owner)))
	require.NoError(t, err)
	sys.Root.Stop(owner)
	<-p2.Done()

	settle := time.After(300 * time.Millisecond) // dead letters are published as they happen
	for {
		select {
		case d := <-deadc:
			dead = append(dead, d)
			continue
		case <-settle:
		}
		break
	}
	assert.Empty(t, dead)
	assert.Zero(t, rec.Count("DeadLetter"))
}

func protoactorTypeName(v any) string {
	return fmt.Sprintf("%T", v)
}
