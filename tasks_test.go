package snodo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, TaskRequired, tool.Execution.TaskSupport)
	out, err := json.Marshal(tool)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))
}
