package supervisor

import (
	"context"

	"github.com/snodo/snodo"
)

// Tasks (snodo.Calls.CallToolAsTask, and CallTool on a tool that runs as
// a task) belong to the server process that created them: the typed
// calls create a task on the connection Await returns and keep
// every later call of the task there. After a restart, or once the
// member has left the pool, the task is lost with its server: its Wait
// fails with a -32000 wrapping snodo.ErrTaskLost.

// Await returns the running connection of the least-loaded member,
// waiting for one as a call does (Client.Await). The typed calls create
// a task on it.
func (p *Pool) Await(ctx context.Context) (*snodo.Client, error) {
	m, err := p.pick(ctx, "Await", nil, 0, !p.cfg.failFast)
	if err != nil {
		return nil, err
	}
	defer m.s.release()
	return m.Await(ctx)
}
