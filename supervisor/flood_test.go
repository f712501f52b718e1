package supervisor

import (
	"errors"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// A flood of call messages to a supervisor's and a pool's PID with Close
// in the middle of it: every call gets exactly one reply, those still in
// the actor's mailbox as it stops included.
func TestCallFloodWithCloseOneReplyEach(t *testing.T) {
	cmd, args := testutil.Server(t)
	for _, pool := range []bool{false, true} {
		var pid *protoactor.PID
		var closeIt func() error
		if pool {
			p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
			require.NoError(t, err)
			pid, closeIt = p.PID(), p.Close
		} else {
			c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast)
			require.NoError(t, err)
			pid, closeIt = c.PID(), c.Close
		}
		const n = 3000
		sys := snodoactor.Shared()
		got := make(chan *snodo.Reply, 2*n)
		sender := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
			switch msg := ctx.Message().(type) {
			case int:
				for i := range msg {
					if i == msg/2 {
						go closeIt()
					}
					ctx.Request(pid, &snodo.Call{Method: "test/sleep", Params: map[string]int{"ms": 20}, Tag: i})
				}
			case *snodo.Reply:
				got <- msg
			}
		}))
		sys.Root.Send(sender, n)
		seen := map[int]int{}
		counts := map[string]int{}
		deadline := time.After(30 * time.Second)
		for len(seen) < n {
			select {
			case r := <-got:
				seen[r.Tag.(int)]++
				require.Equal(t, 1, seen[r.Tag.(int)], "a second reply to call %v", r.Tag)
				switch {
				case r.Err == nil:
					counts["ok"]++
				case errors.Is(r.Err, snodo.ErrTooManyCalls):
					counts["too many"]++
				case errors.Is(r.Err, snodo.ErrConnectionClosed):
					counts["closed"]++
				default:
					counts[r.Err.Error()]++
				}
			case <-deadline:
				t.Fatalf("pool=%v: %d of %d answered: %v", pool, len(seen), n, counts)
			}
		}
		sys.Root.Stop(sender)
		t.Logf("pool=%v: %v", pool, counts)
	}
}
