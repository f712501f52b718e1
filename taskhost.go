package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snodo/snodo/internal/mcpmethod"
)

// A task belongs to the server process that created it. A requester whose
// calls may reach more than one server over time — a supervised client
// (a restart brings a new server), a pool (each call goes to a member) —
// offers the one connection a task is to be created on and then stays on
// (taskHost); snodo's supervisor.Client and supervisor.Pool do. When that
// connection ends while its owner lives on (a restart, a member that
// left), the task is lost with its server: Wait fails with a -32000
// wrapping ErrTaskLost.

// taskHost is implemented by a requester that spreads calls over servers.
type taskHost interface {
	// Await returns the connection a task is to be created on,
	// waiting for one as a call would.
	Await(ctx context.Context) (*Client, error)
}

// forTask returns the calls a task is created and run with: for a
// taskHost, the calls of the one connection it chooses; else c.
func (c Calls) forTask(ctx context.Context) (Calls, error) {
	h, ok := c.requester().(taskHost)
	if !ok {
		return c, nil
	}
	conn, err := h.Await(ctx)
	if err != nil {
		return c, err
	}
	return newCalls(pinned{conn: conn, owner: c.requester()}, conn.inputHandling), nil
}

// modernTaskCalls reports whether a CallTool on a taskHost in the modern
// era must stay on one connection because its server may answer with a
// task (it advertises the tasks extension), and returns that
// connection's calls.
func (c Calls) modernTaskCalls(ctx context.Context) (Calls, bool) {
	h, ok := c.requester().(taskHost)
	if !ok || c.requester().Era() != EraModern {
		return c, false
	}
	conn, err := h.Await(ctx)
	if err != nil {
		return c, false // the plain path meets the same error, and says it
	}
	if _, offered := conn.Capabilities().Extensions[mcpmethod.TasksExtension]; !offered {
		return c, false
	}
	return newCalls(pinned{conn: conn, owner: c.requester()}, conn.inputHandling), true
}

// pinned sends every request of a task to the connection that created
// it; once that connection is gone while its owner lives on, the task is
// lost.
type pinned struct {
	conn  *Client
	owner requester
}

func (p pinned) Request(ctx context.Context, method string, params any, opts ...RequestOption) (json.RawMessage, error) {
	raw, err := p.conn.Request(ctx, method, params, opts...)
	if err != nil && errors.Is(err, ErrConnectionClosed) && p.ownerLives() {
		return nil, p.lost(err)
	}
	return raw, err
}

func (p pinned) Era() Era                         { return p.conn.Era() }
func (p pinned) Capabilities() ServerCapabilities { return p.conn.Capabilities() }
func (p pinned) Done() <-chan struct{}            { return p.conn.Done() }

// Err is why the connection ended; while its owner lives on, an error
// wrapping ErrTaskLost.
func (p pinned) Err() error {
	if p.ownerLives() {
		return p.lost(p.conn.Err())
	}
	if l, ok := p.owner.(liveness); ok && l.Err() != nil {
		return l.Err()
	}
	return p.conn.Err()
}

func (p pinned) ownerLives() bool {
	l, ok := p.owner.(liveness)
	if !ok {
		return false
	}
	select {
	case <-l.Done():
		return false
	default:
		return true
	}
}

func (p pinned) lost(cause error) error {
	return fmt.Errorf("%w: its server (pid %d) went away (%w); the server now serving does not know the task: call the tool again",
		ErrTaskLost, p.conn.ServerPID(), cause)
}
