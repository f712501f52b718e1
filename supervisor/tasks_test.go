package supervisor

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// A task belongs to the server that created it: after a restart its Wait
// fails with ErrTaskLost, and the restarted server runs new tasks.
func TestTaskLostWithItsServer(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			ev := newEvents()
			cmd, args := testutil.Server(t, "-tasks", "-era", era)
			c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option())
			require.NoError(t, err)
			ev.waitFor(t, "connected", 5*time.Second)
			task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"ms": 60000})
			require.NoError(t, err)

			kill(t, c.serverPID())
			_, err = task.Wait(t.Context())
			require.ErrorIs(t, err, snodo.ErrTaskLost)
			assert.ErrorIs(t, err, snodo.ErrConnectionClosed)

			ev.waitFor(t, "connected", 5*time.Second)
			res, err := c.CallTool(t.Context(), "research", map[string]any{"topic": "again"})
			require.NoError(t, err)
			assert.Equal(t, "Report on again", res.Text())
		})
	}
}

// A pool keeps each task's calls on the member that created it.
func TestPoolKeepsATaskOnItsMember(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			cmd, args := testutil.Server(t, "-tasks", "-era", era)
			p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 3, fast)
			require.NoError(t, err)
			tasks := make([]*snodo.Task, 6)
			for i := range tasks {
				tasks[i], err = p.CallToolAsTask(t.Context(), "research", map[string]any{"topic": strconv.Itoa(i), "ms": 200})
				require.NoError(t, err)
			}
			for i, task := range tasks {
				res, err := task.Wait(t.Context())
				require.NoError(t, err)
				assert.Equal(t, "Report on "+strconv.Itoa(i), res.Text())
			}
			for i := range 6 {
				res, err := p.CallTool(t.Context(), "research", map[string]any{"topic": strconv.Itoa(i), "ms": 100})
				require.NoError(t, err)
				assert.Equal(t, "Report on "+strconv.Itoa(i), res.Text())
			}
		})
	}
}
