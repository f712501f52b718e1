package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/test/testutil"
)

// Integration tests against MCP servers nobody here wrote (plus our own
// TypeScript SDK v2 server). test/peers/install.sh installs them; a peer
// that is missing fails its test with the command that installs it.

// peer is one way to start a real server.
type peer struct {
	command string
	args    []string
}

// peerPath and nodePath are testutil's, named short for this file's many
// uses.
func peerPath(t *testing.T, rel string) string { t.Helper(); return testutil.PeerPath(t, rel) }

func nodePath(t *testing.T) string { t.Helper(); return testutil.NodePath(t) }

func goEverything(t *testing.T) peer {
	return peer{command: peerPath(t, "bin/everything-server")}
}

func tsEverything(t *testing.T) peer {
	return peer{command: nodePath(t), args: []string{
		peerPath(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}}
}

func tsModern(t *testing.T) peer {
	peerPath(t, "node_modules/@modelcontextprotocol/server/package.json")
	return peer{command: nodePath(t), args: []string{peerPath(t, "ts-modern/server.mjs")}}
}

// answers records the server requests a fake user answered.
type answers struct {
	mu      sync.Mutex
	methods []string
}

func (a *answers) saw(method string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.methods, method)
}

// handler answers sampling, elicitation and roots like a user would.
func (a *answers) handler(_ context.Context, req *ServerRequest) (any, error) {
	a.mu.Lock()
	a.methods = append(a.methods, req.Method)
	a.mu.Unlock()
	switch req.Method {
	case "sampling/createMessage":
		if _, err := req.Sampling(); err != nil {
			return nil, err
		}
		return &handlers.CreateMessageResult{Role: "assistant", Model: "test-model", StopReason: "endTurn",
			Content: handlers.SamplingContents{{Type: "text", Text: "four"}}}, nil
	case "elicitation/create":
		p, err := req.Elicitation()
		if err != nil {
			return nil, err
		}
		return &handlers.ElicitResult{Action: "accept", Content: fillForm(p)}, nil
	case "roots/list":
		return &handlers.ListRootsResult{Roots: []handlers.Root{{URI: "file:///work", Name: "work"}}}, nil
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "not handled: " + req.Method}
}

// fillForm answers every field of a form: the values the peers' tools
// expect where they name them, otherwise a valid value of the field's
// type (every answer is checked against the schema before it is sent).
func fillForm(p *handlers.ElicitParams) map[string]any {
	known := map[string]any{"name": "Ada", "username": "ada", "color": "blue", "ok": true}
	content := map[string]any{}
	if p.RequestedSchema == nil {
		return content
	}
	for name, f := range p.RequestedSchema.Properties {
		opts := f.Options()
		switch v, ok := known[name]; {
		case ok && (len(opts) == 0 || slices.Contains(opts, fmt.Sprint(v))):
			content[name] = v
		case f.Type == "array":
			content[name] = opts[:min(1, len(opts))]
		case len(opts) > 0:
			content[name] = opts[0]
		case f.Type == "boolean":
			content[name] = true
		case f.Type == "number" || f.Type == "integer":
			content[name] = 1
			if f.Minimum != nil {
				content[name] = *f.Minimum
			}
		case f.Format == "email":
			content[name] = "ada@example.com"
		case f.Format == "uri":
			content[name] = "https://example.com"
		case f.Format == "date":
			content[name] = "2026-01-02"
		case f.Format == "date-time":
			content[name] = "2026-01-02T03:04:05Z"
		default:
			content[name] = "Ada"
		}
	}
	return content
}

var allCaps = ClientCapabilities{
	Sampling:    &SamplingCapability{},
	Elicitation: &ElicitationCapability{Form: true},
	Roots:       &ListChangedCapability{ListChanged: true},
}

// dialPeer connects to p, answering server requests with a, and closes
// the client and waits for the process to exit when the test ends.
func dialPeer(t *testing.T, p peer, a *answers, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{
		WithClientInfo("snodo-peers-test", "1.0.0"),
		WithClientCapabilities(allCaps),
		WithServerRequestHandler(a.handler),
		WithTimeout(30 * time.Second),
		WithShutdownGrace(10 * time.Second),
	}, opts...)
	c, err := Connect(t.Context(), p.command, p.args, opts...)
	require.NoError(t, err)
	testutil.CloseAtEnd(t, c)
	return c
}

func toolNames(t *testing.T, c *Client) []string {
	t.Helper()
	tools, err := c.ListTools(t.Context())
	require.NoError(t, err)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	return names
}

// assertRemovedInModern checks that ping and logging/setLevel are gone
// from a modern server while Ping and SetLoggingLevel still work.
func assertRemovedInModern(t *testing.T, c *Client) {
	t.Helper()
	for _, method := range []string{"ping", "logging/setLevel"} {
		_, err := c.Request(t.Context(), method, map[string]string{"level": "info"})
		var e *Error
		require.ErrorAs(t, err, &e, method)
		assert.Equal(t, CodeMethodNotFound, e.Code, method)
	}
	require.NoError(t, c.Ping(t.Context()))
	require.NoError(t, c.SetLoggingLevel(t.Context(), "info"))
}

func TestGoSDKServerModern(t *testing.T) {
	a := &answers{}
	c := dialPeer(t, goEverything(t), a)
	require.Equal(t, EraModern, c.Era(), "the Go SDK server answers a probe that carries the full _meta")
	assert.Equal(t, "2026-07-28", c.ProtocolVersion())
	assert.Equal(t, "mcp-conformance-test-server", c.ServerInfo().Name)
	assert.Contains(t, toolNames(t, c), "test_simple_text")
	assertRemovedInModern(t, c)

	res, err := c.CallTool(t.Context(), "test_simple_text", nil)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Text())

	var updates []Progress
	_, err = c.CallTool(t.Context(), "test_tool_with_progress", nil,
		OnProgress(func(p Progress) { updates = append(updates, p) }))
	require.NoError(t, err)
	assert.Len(t, updates, 3)

	// input_required results with content: null and plain-text state.
	for tool, want := range map[string]string{
		"test_input_required_result_elicitation":     "Hello, Ada!",
		"test_input_required_result_sampling":        "Sampling response: four",
		"test_input_required_result_list_roots":      "file:///work",
		"test_input_required_result_request_state":   "state-ok",
		"test_input_required_result_multi_round":     "Ada likes blue",
		"test_input_required_result_multiple_inputs": "four Ada",
	} {
		res, err := c.CallTool(t.Context(), tool, nil)
		require.NoError(t, err, tool)
		assert.False(t, res.IsError, tool)
		assert.Contains(t, res.Text(), want, tool)
	}
	prompt, err := c.GetPrompt(t.Context(), "test_input_required_result_prompt", nil)
	require.NoError(t, err)
	assert.NotEmpty(t, prompt.Messages)

	read, err := c.ReadResource(t.Context(), "test://static-text")
	require.NoError(t, err)
	assert.NotEmpty(t, read.Contents)
}

func TestGoSDKServerLegacy(t *testing.T) {
	a := &answers{}
	c := dialPeer(t, goEverything(t), a, WithEra(EraLegacy))
	require.Equal(t, EraLegacy, c.Era())
	assert.Equal(t, "2025-11-25", c.ProtocolVersion())
	require.NoError(t, c.Ping(t.Context()))
	require.NoError(t, c.SetLoggingLevel(t.Context(), "debug"))

	// Pushed sampling and elicitation requests go to the same handler.
	res, err := c.CallTool(t.Context(), "test_sampling", map[string]string{"prompt": "2+2?"})
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "LLM response: four")
	assert.True(t, a.saw("sampling/createMessage"))

	res, err = c.CallTool(t.Context(), "test_input_required_result_elicitation", nil)
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "Hello, Ada!", "legacy era: the tool pushes elicitation/create instead")
	assert.True(t, a.saw("elicitation/create"))
}

func TestTypeScriptEverythingServerLegacy(t *testing.T) {
	a := &answers{}
	c := dialPeer(t, tsEverything(t), a)
	require.Equal(t, EraLegacy, c.Era())
	assert.Contains(t, []string{"2025-11-25", "2025-06-18"}, c.ProtocolVersion())

	// The capability-gated tools arrive after initialized, announced by
	// tools/list_changed notifications mixed with the first responses.
	require.Eventually(t, func() bool {
		tools, err := c.ListTools(t.Context())
		return err == nil && slices.ContainsFunc(tools, func(tool Tool) bool { return tool.Name == "trigger-sampling-request" })
	}, 10*time.Second, 50*time.Millisecond, "sampling tool offered to a client that declared sampling")

	res, err := c.CallTool(t.Context(), "echo", map[string]string{"message": "hi"})
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "hi")

	var updates []Progress
	_, err = c.CallTool(t.Context(), "trigger-long-running-operation", map[string]int{"duration": 1, "steps": 3},
		OnProgress(func(p Progress) { updates = append(updates, p) }))
	require.NoError(t, err)
	assert.Len(t, updates, 3)

	// A pushed sampling request, answered by the handler.
	res, err = c.CallTool(t.Context(), "trigger-sampling-request", map[string]string{"prompt": "2+2?"})
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "four")
	assert.True(t, a.saw("sampling/createMessage"))

	require.NoError(t, c.SetLoggingLevel(t.Context(), "info"))
	require.NoError(t, c.Ping(t.Context()))

	// ~350 ms after initialized the server asks for the roots; the
	// handler answers the pushed request.
	require.Eventually(t, func() bool { return a.saw("roots/list") }, 10*time.Second, 20*time.Millisecond)
	raw, err := json.Marshal(c.Capabilities())
	require.NoError(t, err)
	assert.Contains(t, string(raw), "tools")
}

func TestTypeScriptSDKv2ServerModern(t *testing.T) {
	a := &answers{}
	c := dialPeer(t, tsModern(t), a)
	require.Equal(t, EraModern, c.Era(), "the v2 server picks its era from the first message: the probe")
	assert.Equal(t, "snodo-ts-modern", c.ServerInfo().Name)
	assert.Equal(t, "modern-only test peer", c.Instructions())
	assert.Subset(t, toolNames(t, c), []string{"greet", "count", "ask_name", "ask_model"})
	assertRemovedInModern(t, c)

	res, err := c.CallTool(t.Context(), "greet", map[string]string{"name": "Ada"})
	require.NoError(t, err)
	assert.Equal(t, "Hello, Ada!", res.Text())

	var updates []Progress
	_, err = c.CallTool(t.Context(), "count", map[string]int{"steps": 4},
		OnProgress(func(p Progress) { updates = append(updates, p) }))
	require.NoError(t, err)
	assert.Len(t, updates, 4)

	res, err = c.CallTool(t.Context(), "ask_name", nil)
	require.NoError(t, err)
	assert.Equal(t, "Hello, Ada!", res.Text())
	res, err = c.CallTool(t.Context(), "ask_model", nil)
	require.NoError(t, err)
	assert.Equal(t, "model said: four", res.Text())
}

// expectToolsListChanged listens for tools/list_changed, runs trigger and
// waits for the event. Closing the subscription does not wait for an
// answer (the TypeScript SDK v2 never answers a cancelled listen).
func expectToolsListChanged(t *testing.T, c *Client, trigger func()) {
	t.Helper()
	sub, err := c.Listen(t.Context(), Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	assert.True(t, sub.Acknowledged().ToolsListChanged)
	trigger()
	select {
	case ev := <-sub.Events():
		assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed within 10 s")
	}
}

func TestGoSDKServerSubscription(t *testing.T) {
	c := dialPeer(t, goEverything(t), &answers{})
	expectToolsListChanged(t, c, func() {
		_, err := c.CallTool(t.Context(), "test_trigger_tool_change", nil)
		require.NoError(t, err)
	})
}

func TestTypeScriptSDKv2ServerSubscription(t *testing.T) {
	c := dialPeer(t, tsModern(t), &answers{})
	expectToolsListChanged(t, c, func() {
		res, err := c.CallTool(t.Context(), "add_tool", nil)
		require.NoError(t, err)
		assert.Equal(t, "added extra_1", res.Text())
	})
}

// nilArgs are the forms of "no arguments" a Go caller passes; none may
// reach the server as "arguments": null, which TypeScript SDK servers
// reject.
var nilArgs = map[string]any{
	"nil":            nil,
	"nil map":        map[string]any(nil),
	"nil RawMessage": json.RawMessage(nil),
	"nil pointer":    (*struct{})(nil),
}

func TestNilArgumentsAgainstTypeScriptServers(t *testing.T) {
	for name, p := range map[string]struct {
		peer func(*testing.T) peer
		tool string
		era  Era
	}{
		"everything (legacy)": {tsEverything, "get-tiny-image", EraLegacy},
		"SDK v2 (modern)":     {tsModern, "add_tool", EraModern},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialPeer(t, p.peer(t), &answers{}, WithEra(p.era))
			for form, args := range nilArgs {
				res, err := c.CallTool(t.Context(), p.tool, args)
				require.NoError(t, err, form)
				assert.False(t, res.IsError, "%s: %s", form, res.Text())
			}
		})
	}
}

// The reference server's unsolicited notifications reach an actor through
// the notification handler: log messages after SetLoggingLevel and
// tools/list_changed; a Listen on a resource gets its updates
// (resources/subscribe on this legacy server).
func TestTypeScriptEverythingNotificationsReachAnActor(t *testing.T) {
	got := make(chan *Notification, 256)
	system := snodoactor.Shared()
	pid := system.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if m, ok := ctx.Message().(*Notification); ok {
			got <- m
		}
	}))
	defer system.Root.Stop(pid)
	c := dialPeer(t, tsEverything(t), &answers{}, WithEra(EraLegacy), WithNotificationHandler(NotificationsTo(system, pid)))
	require.Equal(t, EraLegacy, c.Era())
	waitFor := func(method string, ok func(*Notification) bool) *Notification {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case n := <-got:
				if n.Method == method && (ok == nil || ok(n)) {
					return n
				}
			case <-deadline:
				t.Fatalf("no %s within 15 s", method)
			}
		}
	}
	waitFor(methodToolsListChanged, nil) // the capability-gated tools arrive after initialized

	require.NoError(t, c.SetLoggingLevel(t.Context(), "debug"))
	_, err := c.CallTool(t.Context(), "toggle-simulated-logging", nil)
	require.NoError(t, err)
	n := waitFor(methodLogMessage, nil)
	var m LogMessage
	require.NoError(t, json.Unmarshal(n.Params, &m))
	assert.NotEmpty(t, m.Data)

	resources, err := c.ListResources(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, resources)
	uri := resources[0].URI
	// The legacy server's resources/subscribe, through Listen: the
	// updates are the subscription's events, not the handler's.
	sub, err := c.Listen(t.Context(), Filter{ResourceSubscriptions: []string{uri}})
	require.NoError(t, err)
	assert.Equal(t, []string{uri}, sub.Acknowledged().ResourceSubscriptions)
	_, err = c.CallTool(t.Context(), "toggle-subscriber-updates", nil)
	require.NoError(t, err)
	select {
	case ev := <-sub.Events():
		require.Equal(t, methodResourceUpdated, ev.Method)
		assert.Contains(t, string(ev.Params), uri)
	case <-time.After(30 * time.Second):
		t.Fatalf("no update of %s within 30 s: %v", uri, sub.Err())
	}
	require.NoError(t, sub.Close())
	assert.ErrorIs(t, sub.Err(), ErrSubscriptionClosed)
	// Stop both timers, which would keep the server alive after EOF.
	for _, tool := range []string{"toggle-simulated-logging", "toggle-subscriber-updates"} {
		_, err = c.CallTool(t.Context(), tool, nil)
		require.NoError(t, err)
	}
}

// A reference server's multiple input requests in one round run on the
// handler path under the bound: with a bound of 1 they take turns.
func TestGoSDKServerInputRequestsUnderTheBound(t *testing.T) {
	a := &answers{}
	var cc concurrency
	c := dialPeer(t, goEverything(t), a, WithMaxServerRequests(1), WithServerRequestHandler(func(ctx context.Context, req *ServerRequest) (any, error) {
		cc.enter()
		defer cc.leave()
		return a.handler(ctx, req)
	}))
	require.Equal(t, EraModern, c.Era())
	res, err := c.CallTool(t.Context(), "test_input_required_result_multiple_inputs", nil)
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "four Ada")
	assert.GreaterOrEqual(t, cc.total.Load(), int32(2), "more than one input request in the round")
	assert.Equal(t, int32(1), cc.most.Load(), "never two at once under a bound of 1")
}

// A modern reference server's log messages (carried on the call's
// response stream, at the level in _meta) reach the handler.
func TestGoSDKServerLogMessagesReachTheHandler(t *testing.T) {
	for _, era := range []Era{EraModern, EraLegacy} {
		t.Run(string(era), func(t *testing.T) {
			got := make(chan *Notification, 64)
			c := dialPeer(t, goEverything(t), &answers{}, WithEra(era),
				WithNotificationHandler(func(_ context.Context, n *Notification) { got <- n }))
			require.NoError(t, c.SetLoggingLevel(t.Context(), "debug"))
			_, err := c.CallTool(t.Context(), "test_tool_with_logging", nil)
			require.NoError(t, err)
			require.NoError(t, c.notes.flush(t.Context()))
			var logs []LogMessage
			for len(got) > 0 {
				var m LogMessage
				if n := <-got; n.Method == methodLogMessage && json.Unmarshal(n.Params, &m) == nil {
					logs = append(logs, m)
				}
			}
			require.NotEmpty(t, logs, "log messages delivered")
			assert.NotEmpty(t, logs[0].Data)
		})
	}
}

// The reference servers' richest forms (formats, enums, multi-selects,
// titled choices) are answered through the typed handler and pass the
// schema check before they are sent.
func TestTypedElicitationOfReferenceForms(t *testing.T) {
	for name, tc := range map[string]struct {
		peer func(*testing.T) peer
		era  Era
		tool string
	}{
		"go-sdk defaults (legacy)":  {goEverything, EraLegacy, "test_elicitation_sep1034_defaults"},
		"everything forms (legacy)": {tsEverything, EraLegacy, "trigger-elicitation-request"},
	} {
		t.Run(name, func(t *testing.T) {
			var forms []*handlers.ElicitParams
			var mu sync.Mutex
			a := &answers{}
			c := dialPeer(t, tc.peer(t), a, WithEra(tc.era), WithServerRequestHandler(func(ctx context.Context, req *ServerRequest) (any, error) {
				if p, err := req.Elicitation(); err == nil {
					mu.Lock()
					forms = append(forms, p)
					mu.Unlock()
				}
				return a.handler(ctx, req)
			}))
			require.Eventually(t, func() bool { return slices.Contains(toolNames(t, c), tc.tool) }, 10*time.Second, 50*time.Millisecond)
			res, err := c.CallTool(t.Context(), tc.tool, nil)
			require.NoError(t, err)
			assert.False(t, res.IsError, res.Text())
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, forms)
			require.NotNil(t, forms[0].RequestedSchema)
			assert.NotEmpty(t, forms[0].RequestedSchema.Properties)
		})
	}
}
