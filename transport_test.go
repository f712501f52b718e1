package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/testserver"
)

// InMemoryTestServer is inMemoryTestServer for package snodo_test.
func InMemoryTestServer(flags ...string) Transport { return inMemoryTestServer(flags...) }

// inMemoryTestServer is the test server (test/testserver) run in this
// process behind connection.InMemory, with flags.
func inMemoryTestServer(flags ...string) Transport {
	return connection.InMemory(func(_ context.Context, in io.Reader, out io.Writer) error {
		if code := testserver.Main(flags, in, out, io.Discard); code != 0 {
			return &exitCode{code}
		}
		return nil
	})
}

type exitCode struct{ code int }

func (e *exitCode) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// dialInMemory connects to the in-memory test server and closes the
// client when the test ends, waiting for the server to return.
func dialInMemory(t *testing.T, flags []string, opts ...Option) *Client {
	t.Helper()
	c, err := ConnectTransport(t.Context(), inMemoryTestServer(flags...), opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Error("the in-memory server did not return within 10 s of Close")
		}
	})
	return c
}

// TestEveryTransportRunsTheSameAPI runs the typed API and Listen with the
// same code over each transport the test server can be reached by: as a
// child process over stdio, and in this process over connection.InMemory,
// in both eras. Nothing above the transport may tell them apart.
func TestEveryTransportRunsTheSameAPI(t *testing.T) {
	transports := map[string]func(t *testing.T, flags []string) *Client{
		"stdio":     func(t *testing.T, flags []string) *Client { return dialTest(t, flags) },
		"in-memory": func(t *testing.T, flags []string) *Client { return dialInMemory(t, flags) },
	}
	for name, dial := range transports {
		for _, era := range []string{"modern", "legacy"} {
			t.Run(name+"/"+era, func(t *testing.T) {
				c := dial(t, []string{"-era", era})
				ExerciseSession(t, c, Era(era))
			})
		}
	}
}

// ExerciseSession runs every typed call, progress, errors and (modern) a
// subscription against the test server behind c. It is exported (in a
// test file: no part of the API) so that transport_http_test.go, in
// package snodo_test because it imports package gateway, runs the same
// code over Streamable HTTP.
func ExerciseSession(t *testing.T, c *Client, era Era) {
	ctx := t.Context()
	assert.Equal(t, era, c.Era())
	require.NoError(t, c.Ping(ctx))

	tools, err := c.ListTools(ctx)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, tool := range tools {
		names[tool.Name] = true
	}
	assert.True(t, names["echo"] && names["add"] && names["slow"], "tools: %v", names)

	res, err := c.CallTool(ctx, "add", map[string]any{"a": 2, "b": 3})
	require.NoError(t, err)
	assert.JSONEq(t, `{"sum":5}`, string(res.StructuredContent))

	failed, err := c.CallTool(ctx, "fail", nil)
	require.NoError(t, err)
	assert.True(t, failed.IsError)

	var updates int
	_, err = c.CallTool(ctx, "slow", map[string]any{"ms": 40}, OnProgress(func(Progress) { updates++ }))
	require.NoError(t, err)
	assert.Positive(t, updates, "progress arrives before the result")

	resources, err := c.ListResources(ctx)
	require.NoError(t, err)
	assert.Len(t, resources, 2)
	templates, err := c.ListResourceTemplates(ctx)
	require.NoError(t, err)
	assert.Len(t, templates, 1)
	_, err = c.ReadResource(ctx, "test://nope")
	var e *Error
	require.ErrorAs(t, err, &e, "an unknown resource is the server's error")

	prompts, err := c.ListPrompts(ctx)
	require.NoError(t, err)
	require.Len(t, prompts, 1)
	prompt, err := c.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"})
	require.NoError(t, err)
	require.Len(t, prompt.Messages, 1)

	completion, err := c.Complete(ctx, CompleteRequest{
		Ref:      Reference{Type: "ref/prompt", Name: "greet"},
		Argument: "name", Value: "al",
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha"}, completion.Values)

	raw, err := c.Request(ctx, "test/echo", map[string]string{"k": "v"})
	require.NoError(t, err)
	var echoed map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &echoed))
	assert.JSONEq(t, `"v"`, string(echoed["k"]))

	if era != EraModern {
		return
	}
	sub, err := c.Listen(ctx, Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"}) // to every subscription that wants it
	require.NoError(t, err)
	select {
	case ev := <-sub.Events():
		assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
}
