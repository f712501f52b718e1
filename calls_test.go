package snodo

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

func TestListToolsFollowsEveryPage(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		tools, err := c.ListTools(t.Context())
		require.NoError(t, err)
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
		}
		assert.Equal(t, []string{"echo", "add", "fail", "slow", "ask"}, names)
		assert.Equal(t, 3, len(seen(t, c, "tools/list")), "page size 2: three pages")
		assert.JSONEq(t, `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`, string(tools[1].OutputSchema))
		assert.Contains(t, string(tools[0].InputSchema), `"message"`)
	})
}

func TestCallToolResultsAndToolErrors(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		res, err := c.CallTool(t.Context(), "echo", map[string]string{"message": "hi"})
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		assert.Equal(t, Content{Type: "text", Text: "hi"}, res.Content[0])
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
		var e *Error
		require.ErrorAs(t, err, &e, "an unknown tool is a protocol error")
		assert.Equal(t, CodeInvalidParams, e.Code)
	})
}

func TestCallToolProgress(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		var updates []Progress
		res, err := c.CallTool(t.Context(), "slow", map[string]int{"ms": 50},
			OnProgress(func(p Progress) { updates = append(updates, p) }))
		require.NoError(t, err)
		assert.Equal(t, "slept 50 ms", res.Text())
		require.NotEmpty(t, updates)
		assert.Equal(t, float64(50), updates[0].Total)
	})
}

// ResetTimeoutOnProgress alone asks for progress: a tool that reports
// progress every 10 ms outlives a timeout it runs more than twice as long
// as (the timeout leaves a loaded machine room to stall a few updates).
func TestResetTimeoutOnProgressAloneAsksForProgress(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		res, err := c.CallTool(t.Context(), "slow", map[string]int{"ms": 1200}, Timeout(500*time.Millisecond), ResetTimeoutOnProgress())
		require.NoError(t, err)
		assert.Equal(t, "slept 1200 ms", res.Text())
		calls := seen(t, c, "tools/call")
		assert.Contains(t, string(calls[len(calls)-1].Params), `"progressToken"`)
	})
}

func TestResources(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		resources, err := c.ListResources(t.Context())
		require.NoError(t, err)
		require.Len(t, resources, 2)
		assert.Equal(t, Resource{URI: "test://a", Name: "a", MimeType: "text/plain"}, resources[0])

		templates, err := c.ListResourceTemplates(t.Context())
		require.NoError(t, err)
		require.Len(t, templates, 1)
		assert.Equal(t, "test://items/{id}", templates[0].URITemplate)

		read, err := c.ReadResource(t.Context(), "test://items/7")
		require.NoError(t, err)
		require.Len(t, read.Contents, 1)
		assert.Equal(t, "item 7", read.Contents[0].Text)
	})
}

func TestResourceNotFoundInBothEras(t *testing.T) {
	for era, code := range map[string]int{"legacy": codeResourceNotFound, "modern": CodeInvalidParams} {
		t.Run(era, func(t *testing.T) {
			_, err := dialTest(t, []string{"-era", era}).ReadResource(t.Context(), "test://missing")
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, code, e.Code)
			assert.True(t, IsResourceNotFound(err))
		})
	}
	assert.False(t, IsResourceNotFound(&Error{Code: CodeInvalidParams, Message: "bad"}), "-32602 is not-found only as the answer to resources/read")
}

// Any -32602 answer to resources/read is "not found" (the modern spec's
// code; data.uri is only in its example), and -32002 from any call.
func TestResourceNotFoundWithoutData(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"})
	_, err := c.ReadResource(t.Context(), "test://bare/missing")
	assert.True(t, IsResourceNotFound(err))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeInvalidParams, e.Code)
	assert.Equal(t, e.Error(), err.Error(), "reads as the server's error")

	_, err = c.CallTool(t.Context(), "echo", map[string]any{"message": 1})
	if err != nil {
		assert.False(t, IsResourceNotFound(err))
	}
	_, err = c.Request(t.Context(), "test/error", map[string]any{"code": -32002, "message": "gone"})
	assert.True(t, IsResourceNotFound(err))
	_, err = c.Request(t.Context(), "test/error", map[string]any{"code": -32602, "message": "bad"})
	assert.False(t, IsResourceNotFound(err))
}

func TestPromptsAndCompletion(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		prompts, err := c.ListPrompts(t.Context())
		require.NoError(t, err)
		require.Len(t, prompts, 1)
		assert.Equal(t, []PromptArgument{{Name: "name", Description: "Who to greet.", Required: true}}, prompts[0].Arguments)

		got, err := c.GetPrompt(t.Context(), "greet", map[string]string{"name": "Ada"})
		require.NoError(t, err)
		require.Len(t, got.Messages, 1)
		assert.Equal(t, "user", got.Messages[0].Role)
		assert.Equal(t, "Hello, Ada!", got.Messages[0].Content.Text)

		comp, err := c.Complete(t.Context(), CompleteRequest{
			Ref: Reference{Type: "ref/prompt", Name: "greet"}, Argument: "name", Value: "al",
		})
		require.NoError(t, err)
		assert.Equal(t, []string{"alpha"}, comp.Values)
		assert.Equal(t, 1, comp.Total)
	})
}

func TestCapabilitiesMarshalAsMCPObjects(t *testing.T) {
	caps := ClientCapabilities{
		Sampling:    &SamplingCapability{Tools: true},
		Elicitation: &ElicitationCapability{},
	}
	b, err := json.Marshal(caps)
	require.NoError(t, err)
	assert.JSONEq(t, `{"sampling":{"tools":{}},"elicitation":{}}`, string(b))
	var back ClientCapabilities
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, caps, back)

	all := ClientCapabilities{
		Roots:        &ListChangedCapability{ListChanged: true},
		Sampling:     &SamplingCapability{Context: true, Tools: true},
		Elicitation:  &ElicitationCapability{Form: true, URL: true},
		Experimental: map[string]json.RawMessage{"x": json.RawMessage(`{"a":1}`)},
		Extensions:   map[string]json.RawMessage{"io.example/y": json.RawMessage(`{}`)},
	}
	b, err = json.Marshal(&all)
	require.NoError(t, err)
	assert.JSONEq(t, `{"roots":{"listChanged":true},"sampling":{"context":{},"tools":{}},"elicitation":{"form":{},"url":{}},`+
		`"experimental":{"x":{"a":1}},"extensions":{"io.example/y":{}}}`, string(b))
	back = ClientCapabilities{}
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, all, back)
	b, err = json.Marshal(ClientCapabilities{})
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(b), "the zero value declares nothing")

	// Settings inside a flag, and unknown flags, are a peer's to send.
	require.NoError(t, json.Unmarshal([]byte(`{"sampling":{"context":{"x":1},"future":{}},"elicitation":null}`), &back))
	assert.Equal(t, ClientCapabilities{Sampling: &SamplingCapability{Context: true}}, back)
	assert.Error(t, json.Unmarshal([]byte(`{"sampling":true}`), &back))
}

func TestClientErrFollowsTheStop(t *testing.T) {
	c := dialTest(t, nil)
	assert.NoError(t, c.Err(), "running")
	require.NoError(t, c.Close())
	<-c.Done()
	assert.ErrorIs(t, c.Err(), ErrClosed)
}

// The longest timeouts a time.Duration holds (a remote host adds its
// grace to a caller's) mean "no sooner than that", never a deadline that
// wrapped around into the past and failed the call at once.
func TestLongestTimeoutsDoNotWrapAround(t *testing.T) {
	c := dialTest(t, nil)
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Second, 200 * 365 * 24 * time.Hour} {
		long := make(chan error, 1)
		go func() {
			_, err := c.Request(t.Context(), "test/sleep", map[string]int{"ms": 300}, Timeout(d), MaxTotalTimeout(d))
			long <- err
		}()
		// Another call timing out makes the table look at every deadline.
		_, err := c.Request(t.Context(), "test/sleep", map[string]int{"ms": 200}, Timeout(20*time.Millisecond))
		require.ErrorIs(t, err, ErrTimeout)
		require.NoError(t, testutil.Receive(t, long, 5*time.Second, "the long call's answer"), "Timeout(%d)", d)
	}
}
