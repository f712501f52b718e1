package snodo_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/testutil"
)

// open connects to the test server in era and closes the client (and
// waits for the server to exit) when the test ends.
func open(t *testing.T, era string, opts ...snodo.Option) *snodo.Client {
	t.Helper()
	cmd, args := testutil.Server(t, "-era", era)
	c, err := snodo.Connect(t.Context(), cmd, args, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		select {
		case <-c.Done():
		case <-time.After(20 * time.Second):
			t.Errorf("server still running 20 s after Close")
		}
	})
	return c
}

// countRequests asks the test server how many requests of method it got.
func countRequests(t *testing.T, c *snodo.Client, method string) int {
	t.Helper()
	raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": method})
	require.NoError(t, err)
	var res struct {
		Requests []json.RawMessage `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	return len(res.Requests)
}

// forEachEra runs fn against the test server speaking each era.
func forEachEra(t *testing.T, fn func(t *testing.T, c *snodo.Client)) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) { fn(t, open(t, era)) })
	}
}

func TestListToolsFollowsEveryPage(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *snodo.Client) {
		tools, err := c.ListTools(t.Context())
		require.NoError(t, err)
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
		}
		assert.Equal(t, []string{"echo", "add", "fail", "slow", "ask"}, names)
		assert.Equal(t, 3, countRequests(t, c, "tools/list"), "page size 2: three pages")
		assert.JSONEq(t, `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`, string(tools[1].OutputSchema))
		assert.Contains(t, string(tools[0].InputSchema), `"message"`)
	})
}

func TestToolsIteratorFetchesOnlyWhatIsRead(t *testing.T) {
	c := open(t, "modern")
	for tool, err := range c.Tools(t.Context()) {
		require.NoError(t, err)
		assert.Equal(t, "echo", tool.Name)
		break
	}
	assert.Equal(t, 1, countRequests(t, c, "tools/list"))
}

func TestCallToolResultsAndToolErrors(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *snodo.Client) {
		res, err := c.CallTool(t.Context(), "echo", map[string]string{"message": "hi"})
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		assert.Equal(t, snodo.Content{Type: "text", Text: "hi"}, res.Content[0])
		assert.False(t, res.IsError)

		res, err = c.CallTool(t.Context(), "add", json.RawMessage(`{"a":2,"b":3}`))
		require.NoError(t, err)
		assert.JSONEq(t, `{"sum":5}`, string(res.StructuredContent))
		assert.Equal(t, "5", res.Text())

		res, err = c.CallTool(t.Context(), "fail", nil)
		require.NoError(t, err, "a tool error is a result, not a Go error")
		assert.True(t, res.IsError)
		assert.Equal(t, "tool failed", res.Text())

		_, err = c.CallTool(t.Context(), "nope", nil)
		var e *snodo.Error
		require.ErrorAs(t, err, &e, "an unknown tool is a protocol error")
		assert.Equal(t, snodo.CodeInvalidParams, e.Code)
	})
}

func TestCallToolProgress(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *snodo.Client) {
		var updates []snodo.Progress
		res, err := c.CallTool(t.Context(), "slow", map[string]int{"ms": 50},
			snodo.OnProgress(func(p snodo.Progress) { updates = append(updates, p) }))
		require.NoError(t, err)
		assert.Equal(t, "slept 50 ms", res.Text())
		require.NotEmpty(t, updates)
		assert.Equal(t, float64(50), updates[0].Total)
	})
}

func TestResources(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *snodo.Client) {
		resources, err := c.ListResources(t.Context())
		require.NoError(t, err)
		require.Len(t, resources, 2)
		assert.Equal(t, snodo.Resource{URI: "test://a", Name: "a", MimeType: "text/plain"}, resources[0])

		templates, err := c.ListResourceTemplates(t.Context())
		require.NoError(t, err)
		require.Len(t, templates, 1)
		assert.Equal(t, "test://items/{id}", templates[0].URITemplate)

		read, err := c.ReadResource(t.Context(), "test://items/7")
		require.NoError(t, err)
		require.Len(t, read.Contents, 1)
		assert.Equal(t, "item 7", read.Contents[0].Text)
		b, err := read.Contents[0].Bytes()
		require.NoError(t, err)
		assert.Equal(t, "item 7", string(b))
	})
}

func TestResourceNotFoundInBothEras(t *testing.T) {
	for era, code := range map[string]int{"legacy": snodo.CodeResourceNotFound, "modern": snodo.CodeInvalidParams} {
		t.Run(era, func(t *testing.T) {
			_, err := open(t, era).ReadResource(t.Context(), "test://missing")
			var e *snodo.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, code, e.Code)
			assert.True(t, snodo.IsResourceNotFound(err))
		})
	}
	assert.False(t, snodo.IsResourceNotFound(&snodo.Error{Code: snodo.CodeInvalidParams, Message: "bad"}))
}

func TestPromptsAndCompletion(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *snodo.Client) {
		prompts, err := c.ListPrompts(t.Context())
		require.NoError(t, err)
		require.Len(t, prompts, 1)
		assert.Equal(t, []snodo.PromptArgument{{Name: "name", Description: "Who to greet.", Required: true}}, prompts[0].Arguments)

		got, err := c.GetPrompt(t.Context(), "greet", map[string]string{"name": "Ada"})
		require.NoError(t, err)
		require.Len(t, got.Messages, 1)
		assert.Equal(t, "user", got.Messages[0].Role)
		assert.Equal(t, "Hello, Ada!", got.Messages[0].Content.Text)

		comp, err := c.Complete(t.Context(), snodo.CompleteRequest{
			Ref: snodo.PromptReference("greet"), Argument: "name", Value: "al",
		})
		require.NoError(t, err)
		assert.Equal(t, []string{"alpha"}, comp.Values)
		assert.Equal(t, 1, comp.Total)
	})
}

func TestCapabilitiesMarshalAsMCPObjects(t *testing.T) {
	caps := snodo.ClientCapabilities{
		Sampling:    &snodo.SamplingCapability{Tools: true},
		Elicitation: &snodo.ElicitationCapability{},
	}
	b, err := json.Marshal(caps)
	require.NoError(t, err)
	assert.JSONEq(t, `{"sampling":{"tools":{}},"elicitation":{}}`, string(b))
	var back snodo.ClientCapabilities
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, caps, back)
}
