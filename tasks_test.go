package snodo

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/test/testutil"
)

// GetPrompt without arguments sends "arguments": {}, as CallTool does:
// TypeScript SDK v1 servers reject a missing member.
func TestGetPromptWithoutArgumentsSendsAnEmptyObject(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		_, err := c.GetPrompt(t.Context(), "greet", nil)
		require.NoError(t, err)
		reqs := seen(t, c, "prompts/get")
		require.Len(t, reqs, 1)
		var p map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(reqs[0].Params, &p))
		assert.JSONEq(t, `{}`, string(p["arguments"]))
	})
}

// A tool's execution.taskSupport survives decoding and encoding (snodo
// --json tools prints the tools as decoded).
func TestToolExecutionRoundTrips(t *testing.T) {
	const in = `{"name":"research","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`
	var tool Tool
	require.NoError(t, json.Unmarshal([]byte(in), &tool))
	require.NotNil(t, tool.Execution)
	assert.Equal(t, taskRequired, tool.Execution.TaskSupport)
	out, err := json.Marshal(tool)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))
}

// adaHandler answers every elicitation with the name Ada.
func adaHandler(_ context.Context, req *ServerRequest) (any, error) {
	if req.Method != "elicitation/create" {
		return nil, &Error{Code: CodeMethodNotFound, Message: "not handled: " + req.Method}
	}
	return &handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

// forEachTaskEra runs fn against the test server offering tasks in each
// era, with a handler that answers elicitations.
func forEachTaskEra(t *testing.T, fn func(t *testing.T, c *Client), opts ...Option) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			opts := append([]Option{WithServerRequestHandler(adaHandler),
				WithClientCapabilities(ClientCapabilities{Elicitation: &ElicitationCapability{Form: true}})}, opts...)
			fn(t, dialTest(t, []string{"-era", era, "-tasks"}, opts...))
		})
	}
}

// statuses collects what OnTaskStatus reports.
type statuses struct {
	mu   sync.Mutex
	list []TaskStatus
}

func (s *statuses) add(st TaskStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, st)
}

func (s *statuses) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.list {
		if len(out) == 0 || out[len(out)-1] != st.Status {
			out = append(out, st.Status)
		}
	}
	return out
}

// tasksGets counts the tasks/get requests the server received for id.
func tasksGets(t *testing.T, c *Client, id string) int {
	t.Helper()
	n := 0
	for _, r := range seen(t, c, "tasks/get") {
		var p struct {
			TaskID string `json:"taskId"`
		}
		require.NoError(t, json.Unmarshal(r.Params, &p))
		if p.TaskID == id {
			n++
		}
	}
	return n
}

func TestCallToolRunsATaskRequiredTool(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		tools, err := c.ListTools(t.Context())
		require.NoError(t, err)
		var research *Tool
		for i := range tools {
			if tools[i].Name == "research" {
				research = &tools[i]
			}
		}
		require.NotNil(t, research)
		require.NotNil(t, research.Execution)
		assert.Equal(t, taskRequired, research.Execution.TaskSupport)

		var st statuses
		res, err := c.CallTool(t.Context(), "research", map[string]any{"topic": "go"}, OnTaskStatus(st.add))
		require.NoError(t, err)
		assert.Equal(t, "Report on go", res.Text())
		names := st.names()
		require.NotEmpty(t, names)
		assert.Equal(t, taskWorking, names[0])
		assert.Equal(t, taskCompleted, names[len(names)-1])
	})
}

func TestCallToolAsTaskWaits(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"topic": "actors"}, TaskTTL(time.Minute))
		require.NoError(t, err)
		require.NotEmpty(t, task.ID())
		res, err := task.Wait(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "Report on actors", res.Text())
		assert.Equal(t, taskCompleted, task.Status().Status)
		again, err := task.Wait(t.Context())
		require.NoError(t, err)
		assert.Same(t, res, again, "Wait after the end returns the same outcome")
	})
}

// Input a task needs goes through the handler: legacy, the server's own
// elicitation/create while tasks/result waits; modern, the task's
// inputRequests answered with tasks/update.
func TestTaskInputRound(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		var st statuses
		res, err := c.CallTool(t.Context(), "research", map[string]any{"topic": "go", "ask": true}, OnTaskStatus(st.add))
		require.NoError(t, err)
		assert.Equal(t, "Report on go, for Ada", res.Text())
		if c.Era() == EraModern {
			assert.Len(t, seen(t, c, "tasks/update"), 1)
			assert.Contains(t, st.names(), taskInputRequired)
		}
	})
}

func TestTaskFailedIsTheServersError(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		_, err := c.CallTool(t.Context(), "research", map[string]any{"fail": true})
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.False(t, e.Local())
		assert.Equal(t, CodeInternalError, e.Code)
		assert.Equal(t, "research failed", e.Message)
	})
}

func TestCancelEndsWait(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"ms": 60000})
		require.NoError(t, err)
		waited := make(chan error, 1)
		go func() { _, err := task.Wait(t.Context()); waited <- err }()
		require.NoError(t, task.Cancel(t.Context()))
		err = testutil.Receive(t, waited, 10*time.Second, "Wait's end")
		require.ErrorIs(t, err, ErrTaskCancelled)
		assert.Len(t, seen(t, c, "tasks/cancel"), 1)
		<-task.Done()
		assert.NoError(t, task.Cancel(t.Context()), "a task already over is left alone")
	})
}

// The ctx given to CallToolAsTask owns the task: when it ends the task is
// cancelled on the server and Wait fails with its error.
func TestTaskOwnerCtxCancels(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		ctx, cancel := context.WithCancel(t.Context())
		task, err := c.CallToolAsTask(ctx, "research", map[string]any{"ms": 60000})
		require.NoError(t, err)
		cancel()
		_, err = task.Wait(t.Context())
		require.ErrorIs(t, err, context.Canceled)
		assert.Len(t, seen(t, c, "tasks/cancel"), 1)

		// CallTool's ctx: the same, and nothing outlives the call. It
		// ends once the task exists (its first status).
		ctx, cancel = context.WithCancel(t.Context())
		defer cancel()
		_, err = c.CallTool(ctx, "research", map[string]any{"ms": 60000}, OnTaskStatus(func(TaskStatus) { cancel() }))
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, ErrTaskCancelled)
		assert.Len(t, seen(t, c, "tasks/cancel"), 2)
	})
}

// A task's server dying fails Wait with -32000, as for any request.
func TestTaskServerDies(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"ms": 60000, "pollMs": 60000})
		require.NoError(t, err)
		_, _ = c.Request(t.Context(), "test/crash", map[string]any{"code": 3})
		_, err = task.Wait(t.Context())
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, CodeConnectionClosed, e.Code)
		assert.ErrorIs(t, err, ErrConnectionClosed)
	})
}

// A task not done within its TTL fails with ErrTaskExpired, however long
// the server's poll interval.
func TestTaskTTLExpires(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"ms": 60000, "ttlMs": 300, "pollMs": 60000}, TaskTTL(300*time.Millisecond))
		require.NoError(t, err)
		assert.Equal(t, 300*time.Millisecond, task.Status().TTL)
		_, err = task.Wait(t.Context())
		require.ErrorIs(t, err, ErrTaskExpired)
	})
}

// Polling honours the server's interval: never more polls than the time
// the task took allows.
func TestTaskPollInterval(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		start := time.Now()
		task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"ms": 1000, "pollMs": 300})
		require.NoError(t, err)
		assert.Equal(t, 300*time.Millisecond, task.Status().PollInterval)
		_, err = task.Wait(t.Context())
		require.NoError(t, err)
		elapsed := time.Since(start)
		polls := tasksGets(t, c, task.ID())
		assert.GreaterOrEqual(t, polls, 1)
		assert.LessOrEqual(t, polls, int(elapsed/(300*time.Millisecond))+1, "polled %d times in %s", polls, elapsed)
	})
}

// A thousand tasks at once: each polls no more often than its interval
// allows (spread at random, so they do not poll together), and all
// complete.
func TestThousandTasksPollBounded(t *testing.T) {
	forEachTaskEra(t, func(t *testing.T, c *Client) {
		const n = 1000
		start := time.Now()
		tasks := make([]*Task, n)
		errs := make(chan error, n)
		for i := range tasks {
			go func() {
				var err error
				tasks[i], err = c.CallToolAsTask(t.Context(), "research", map[string]any{"topic": strconv.Itoa(i), "ms": 500, "pollMs": 100})
				errs <- err
			}()
		}
		for range n {
			require.NoError(t, testutil.Receive(t, errs, time.Minute, "a task's creation"))
		}
		for i, task := range tasks {
			res, err := task.Wait(t.Context())
			require.NoError(t, err)
			require.Equal(t, "Report on "+strconv.Itoa(i), res.Text())
		}
		elapsed := time.Since(start)
		polls := len(seen(t, c, "tasks/get"))
		bound := n * (int(elapsed/minTaskPollInterval) + 1)
		t.Logf("%d tasks: %d polls in %s (bound %d)", n, polls, elapsed, bound)
		assert.LessOrEqual(t, polls, bound)
		assert.GreaterOrEqual(t, polls, n)
	})
}

// A legacy server's notifications/tasks/status stand for polls: the task
// ends when the server says so, not a poll interval later, and the
// notifications still reach the notification handler.
func TestTaskStatusNotificationsEndTheWait(t *testing.T) {
	seenStatus := make(chan struct{}, 64)
	c := dialTest(t, []string{"-era", "legacy", "-tasks"}, WithNotificationHandler(func(_ context.Context, n *Notification) {
		if n.Method == "notifications/tasks/status" {
			seenStatus <- struct{}{}
		}
	}))
	task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"topic": "push", "ms": 300, "pollMs": 60000})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := task.Wait(ctx)
	require.NoError(t, err, "ended by the server's notification, not after its 60 s poll interval")
	assert.Equal(t, "Report on push", res.Text())
	assert.Zero(t, tasksGets(t, c, task.ID()))
	testutil.Receive(t, seenStatus, 5*time.Second, "a status notification at the handler")
}

// A legacy server that declared no tasks is never asked for one: the call
// is plain and the Task is done at once, with no ID.
func TestCallToolAsTaskWithoutServerTasks(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		task, err := c.CallToolAsTask(t.Context(), "echo", map[string]string{"message": "plain"})
		require.NoError(t, err)
		assert.Empty(t, task.ID())
		<-task.Done()
		res, err := task.Wait(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "plain", res.Text())
		for _, r := range seen(t, c, "tools/call") {
			assert.NotContains(t, string(r.Params), `"task"`)
		}
	})
}
