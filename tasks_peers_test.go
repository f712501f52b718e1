package snodo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

// The reference server's simulate-research-query requires a task
// (taskSupport "required", 2025-11-25 core tasks): CallTool runs it as
// one, CallToolAsTask too, and Cancel ends a task's Wait.
func TestEverythingServerResearchTask(t *testing.T) {
	a := &answers{}
	c := dialPeer(t, tsEverything(t), a)
	require.Equal(t, EraLegacy, c.Era())
	require.NotNil(t, c.Capabilities().Tasks, "the server declares tasks")
	waitForTool(t, c, "simulate-research-query")

	tools, err := c.ListTools(t.Context())
	require.NoError(t, err)
	support := map[string]string{}
	for _, tool := range tools {
		if tool.Execution != nil {
			support[tool.Name] = tool.Execution.TaskSupport
		}
	}
	assert.Equal(t, taskRequired, support["simulate-research-query"])

	// A second task, cancelled while the first runs.
	second, err := c.CallToolAsTask(t.Context(), "simulate-research-query", map[string]any{"topic": "actors"})
	require.NoError(t, err)
	require.NotEmpty(t, second.ID())
	cancelled := make(chan error, 1)
	go func() { _, err := second.Wait(t.Context()); cancelled <- err }()

	var st statuses
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := c.CallTool(t.Context(), "simulate-research-query", map[string]any{"topic": "go"}, OnTaskStatus(st.add))
		assert.NoError(t, err)
		if err == nil {
			assert.Contains(t, res.Text(), "# Research Report: go")
		}
	}()
	require.NoError(t, second.Cancel(t.Context()))
	require.ErrorIs(t, testutil.Receive(t, cancelled, 10*time.Second, "the cancelled task's Wait"), ErrTaskCancelled)

	task, err := c.CallToolAsTask(t.Context(), "simulate-research-query", map[string]any{"topic": "mcp"})
	require.NoError(t, err)
	res, err := task.Wait(t.Context())
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "# Research Report: mcp")
	<-done
	assert.Contains(t, st.names(), taskWorking)
	assert.Equal(t, taskCompleted, st.names()[len(st.names())-1])
}

// An ambiguous query asks for a clarification while the task waits
// (input_required): the elicitation reaches the handler through
// tasks/result.
func TestEverythingServerResearchTaskAsksForInput(t *testing.T) {
	a := &answers{}
	c := dialPeer(t, tsEverything(t), a)
	waitForTool(t, c, "simulate-research-query")
	res, err := c.CallTool(t.Context(), "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true})
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "python (programming)")
	assert.True(t, a.saw("elicitation/create"))
}
