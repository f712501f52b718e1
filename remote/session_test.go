package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// useSession is code written once against snodo.Session: typed calls, a
// raw request, a notification and a subscription whose event it makes
// the server send. It knows nothing of how the server is reached.
func useSession(ctx context.Context, s snodo.Session) error {
	tools, err := s.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("ListTools: %w", err)
	}
	if len(tools) == 0 {
		return errors.New("ListTools: no tools")
	}
	res, err := s.CallTool(ctx, "echo", map[string]any{"message": "hello"})
	if err != nil {
		return fmt.Errorf("CallTool: %w", err)
	}
	if len(res.Content) == 0 || res.IsError {
		return fmt.Errorf("CallTool: %+v", res)
	}
	if err := s.Ping(ctx); err != nil {
		return fmt.Errorf("Ping: %w", err)
	}
	if _, err := s.Request(ctx, "tools/list", nil); err != nil {
		return fmt.Errorf("Request: %w", err)
	}
	// A remote session refuses notifications, and says so.
	if err := s.Notify(ctx, "notifications/roots/list_changed", nil); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("Notify: %w", err)
	}
	sub, err := s.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	if err != nil {
		return fmt.Errorf("Listen: %w", err)
	}
	defer sub.Close()
	if !sub.Acknowledged().ToolsListChanged {
		return errors.New("Listen: tools/list_changed not acknowledged")
	}
	// The server that holds the subscription emits the event; a pool may
	// send the request to another member, so it is sent until one comes.
	emit := time.NewTicker(100 * time.Millisecond)
	defer emit.Stop()
	for {
		if _, err := s.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"}); err != nil {
			return fmt.Errorf("test/emit: %w", err)
		}
		select {
		case ev := <-sub.Events():
			if ev.Method == "notifications/tools/list_changed" {
				if err := sub.Close(); err != nil {
					return err
				}
				<-sub.Done()
				if !errors.Is(sub.Err(), snodo.ErrSubscriptionClosed) {
					return fmt.Errorf("subscription ended with %v, want ErrSubscriptionClosed", sub.Err())
				}
				return nil
			}
		case <-emit.C:
		case <-ctx.Done():
			return fmt.Errorf("no event: %w", ctx.Err())
		}
	}
}

// One function runs unchanged on every kind of session: a plain client,
// a supervised client, a pool and a remote client (a host serving a pool
// over a real NATS server).
func TestOneFunctionForEverySession(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	sessions := sessionsOf(t, ctx)
	for _, kind := range []string{"plain", "supervised", "pool", "remote"} {
		t.Run(kind, func(t *testing.T) {
			s := sessions[kind](t)
			require.NoError(t, useSession(ctx, s))
			require.NoError(t, s.Close())
		})
	}
}

// Tasks are part of every session: CallToolAsTask and Wait, the same
// code on the four kinds (a pool of 2 and a remote pool of 2, where the
// task's later calls must reach the member that holds it).
func TestOneTaskFunctionForEverySession(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	sessions := sessionsOf(t, ctx, "-tasks")
	for _, kind := range []string{"plain", "supervised", "pool", "remote"} {
		t.Run(kind, func(t *testing.T) {
			s := sessions[kind](t)
			for i := range 3 {
				task, err := s.CallToolAsTask(ctx, "research", map[string]any{"topic": kind, "ms": 100, "pollMs": 20})
				require.NoError(t, err, "task %d", i)
				res, err := task.Wait(ctx)
				require.NoError(t, err, "task %d", i)
				require.Equal(t, "Report on "+kind, res.Text())
			}
			require.NoError(t, s.Close())
		})
	}
}

// sessionsOf makes each kind of session to the test server with flags.
func sessionsOf(t *testing.T, ctx context.Context, flags ...string) map[string]func(t *testing.T) snodo.Session {
	cmd, args := testutil.Server(t, flags...)
	target := snodo.Command(cmd, args...)
	return map[string]func(t *testing.T) snodo.Session{
		"plain": func(t *testing.T) snodo.Session {
			c, err := target.Connect(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { <-c.Done() })
			return c
		},
		"supervised": func(t *testing.T) snodo.Session {
			c, err := supervisor.Connect(ctx, target)
			require.NoError(t, err)
			t.Cleanup(func() { <-c.Done() })
			return c
		},
		"pool": func(t *testing.T) snodo.Session {
			p, err := supervisor.NewPool(ctx, target, 2)
			require.NoError(t, err)
			t.Cleanup(func() { <-p.Done() })
			return p
		},
		"remote": func(t *testing.T) snodo.Session {
			e := natsServer(t)
			host(t, e, "session", 2, flags...)
			c, err := NewClient(conn(t, e), "session")
			require.NoError(t, err)
			return c
		},
	}
}
