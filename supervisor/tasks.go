package supervisor

import (
	"context"

	"github.com/snodo/snodo"
)

// Tasks (snodo.Calls.CallToolAsTask, and CallTool on a tool that runs as
// a task) belong to the server process that created them: the typed
// calls create a task on the connection TaskServer returns and keep
// every later call of the task there. After a restart, or once the
// member has left the pool, the task is lost with its server: its Wait
// fails with a -32000 wrapping snodo.ErrTaskLost.

// TaskServer is the running connection a task is to be created on, as
// Await waits for it. For the typed calls; most code never needs it.
func (c *Client) TaskServer(ctx context.Context) (*snodo.Client, error) {
	return c.Await(ctx)
}

// TaskServer is the connection of the least-loaded member, a task to be
// created on, waiting for a member as a call does. For the typed calls;
// most code never needs it.
func (p *Pool) TaskServer(ctx context.Context) (*snodo.Client, error) {
	m, err := p.pick(ctx, "tools/call", nil, 0, !p.cfg.failFast)
	if err != nil {
		return nil, err
	}
	defer m.s.release()
	return m.Await(ctx)
}
