package snodo

import (
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// TaskStatusTo delivers each status to an actor as a *TaskStatus,
// the last once the task's outcome is settled.
func TestTaskStatusToAnActor(t *testing.T) {
	system := snodoactor.Shared()
	got := make(chan TaskStatus, 64)
	pid := system.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if m, ok := ctx.Message().(*TaskStatus); ok {
			got <- *m
		}
	}))
	defer testutil.StopActor(t, system, pid, 5*time.Second)
	assert.Nil(t, TaskStatusTo(nil, pid))
	assert.Nil(t, TaskStatusTo(system, nil))

	c := dialTest(t, []string{"-era", "legacy", "-tasks"})
	task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"topic": "actors"}, OnTaskStatus(TaskStatusTo(system, pid)))
	require.NoError(t, err)
	first := testutil.Receive(t, got, 5*time.Second, "the first status")
	assert.Equal(t, task.ID(), first.TaskID)
	assert.Equal(t, taskWorking, first.Status)
	for {
		st := testutil.Receive(t, got, 10*time.Second, "a status")
		if st.Terminal() {
			assert.Equal(t, taskCompleted, st.Status)
			select {
			case <-task.Done():
			default:
				t.Fatal("the final status came before the outcome was settled")
			}
			break
		}
	}
}
