package remote

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/test/testutil"
)

// answerAda answers every elicitation with the name Ada.
func answerAda(_ context.Context, req *snodo.ServerRequest) (any, error) {
	if req.Method != "elicitation/create" {
		return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: "not handled: " + req.Method}
	}
	return &handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

// Tasks over NATS: two hosts serve the test server offering tasks, each
// with a pool of 2, so a task's later calls sent to any host and member
// would mostly miss it. The caller sends them to the host that created
// the task, and that host to the member that holds it: every task ends
// with its own result, CallTool on the task-required tool works, Cancel
// ends Wait, and (modern) the input round goes through tasks/update.
// Before, tasks/get went to any host and member, whose server knew no
// such task.
func TestRemoteTasksStayOnTheirHostAndMember(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			e := natsServer(t)
			var conn []snodo.Option
			if era == "legacy" {
				conn = []snodo.Option{snodo.WithEra(snodo.EraLegacy)}
			}
			hosts := []*Host{hostWith(t, e, "tasks", 2, conn, "-tasks", "-era", era), hostWith(t, e, "tasks", 2, conn, "-tasks", "-era", era)}
			c := client(t, e, "tasks", WithConnectOptions(snodo.WithServerRequestHandler(answerAda)),
				WithConnectOptions(snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}})))

			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					task, err := c.CallToolAsTask(ctxFor(t, 60*time.Second), "research", map[string]any{"topic": strconv.Itoa(i), "ms": 300, "pollMs": 20})
					if !assert.NoError(t, err) {
						return
					}
					res, err := task.Wait(ctxFor(t, 60*time.Second))
					if assert.NoError(t, err, "task %d", i) {
						assert.Equal(t, "Report on "+strconv.Itoa(i), res.Text())
					}
				})
			}
			wg.Wait()
			held := 0
			for _, h := range hosts {
				s := h.served[0]
				s.tasks.mu.Lock()
				held += len(s.tasks.byID)
				s.tasks.mu.Unlock()
			}
			assert.Equal(t, 8, held, "each task is in its host's table")

			res, err := c.CallTool(ctxFor(t, 60*time.Second), "research", map[string]any{"topic": "plain", "pollMs": 20})
			require.NoError(t, err)
			assert.Equal(t, "Report on plain", res.Text())

			task, err := c.CallToolAsTask(ctxFor(t, 60*time.Second), "research", map[string]any{"ms": 60000})
			require.NoError(t, err)
			waited := make(chan error, 1)
			go func() { _, err := task.Wait(ctxFor(t, 60*time.Second)); waited <- err }()
			require.NoError(t, task.Cancel(ctxFor(t, 20*time.Second)))
			err = testutil.Receive(t, waited, 20*time.Second, "Wait's end")
			require.ErrorIs(t, err, snodo.ErrTaskCancelled)

			if era == "modern" {
				res, err := c.CallTool(ctxFor(t, 60*time.Second), "research", map[string]any{"topic": "go", "ask": true, "pollMs": 20})
				require.NoError(t, err)
				assert.Equal(t, "Report on go, for Ada", res.Text())
			}
		})
	}
}

// A task whose host stops is lost with it: Wait fails with a -32000
// wrapping snodo.ErrTaskLost (its later calls find no host on the host's
// own subject), while the other host serves new tasks.
func TestRemoteTaskLostWithItsHost(t *testing.T) {
	e := natsServer(t)
	hosts := []*Host{host(t, e, "tasks", 1, "-tasks"), host(t, e, "tasks", 1, "-tasks")}
	c := client(t, e, "tasks")
	task, err := c.CallToolAsTask(ctxFor(t, 60*time.Second), "research", map[string]any{"ms": 60000, "pollMs": 20})
	require.NoError(t, err)
	holder := c.taskHosts.get(task.ID())
	require.NotEmpty(t, holder)
	for _, h := range hosts {
		if h.ID() == holder {
			require.NoError(t, h.Close())
		}
	}
	_, err = task.Wait(ctxFor(t, 30*time.Second))
	require.ErrorIs(t, err, snodo.ErrTaskLost)
	require.ErrorIs(t, err, snodo.ErrConnectionClosed)

	res, err := c.CallTool(ctxFor(t, 60*time.Second), "research", map[string]any{"topic": "again", "pollMs": 20})
	require.NoError(t, err)
	assert.Equal(t, "Report on again", res.Text())
}

// A task whose member's server dies is lost with it, though its host
// lives on: Wait fails with a -32000 wrapping snodo.ErrTaskLost.
func TestRemoteTaskLostWithItsMembersServer(t *testing.T) {
	e := natsServer(t)
	h := host(t, e, "tasks", 2, "-tasks")
	c := client(t, e, "tasks")
	task, err := c.CallToolAsTask(ctxFor(t, 60*time.Second), "research", map[string]any{"ms": 60000, "pollMs": 20})
	require.NoError(t, err)
	conn := h.served[0].tasks.get(task.ID())
	require.NotNil(t, conn)
	require.NoError(t, syscall.Kill(conn.ServerPID(), syscall.SIGKILL))
	_, err = task.Wait(ctxFor(t, 30*time.Second))
	require.ErrorIs(t, err, snodo.ErrTaskLost)
	require.ErrorIs(t, err, snodo.ErrConnectionClosed)
}
