package snodo

import (
	"context"
	"encoding/json"
	"testing"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/handlers"
)

// The same typed handler answers the ask tool's elicitation in both
// eras: pushed elicitation/create (legacy), input requests (modern).
func TestTypedElicitationInBothEras(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			var seen []*handlers.ElicitParams
			c := dialTest(t, []string{"-era", era}, elicitCaps, WithServerRequestHandler(func(_ context.Context, req *ServerRequest) (any, error) {
				p, err := req.Elicitation()
				if err != nil {
					return nil, err
				}
				seen = append(seen, p) // the bound is 16, but one call asks once per round
				return &handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}))
			res, err := c.CallTool(t.Context(), "ask", map[string]int{"rounds": 2})
			require.NoError(t, err)
			assert.Equal(t, "Hello, Ada!", res.Text())
			require.Len(t, seen, 2)
			assert.Equal(t, "What is your name? (round 2)", seen[1].Message)
			require.NotNil(t, seen[0].RequestedSchema)
			assert.Equal(t, []string{"name"}, seen[0].RequestedSchema.Required)
			assert.Equal(t, "string", seen[0].RequestedSchema.Properties["name"].Type)
		})
	}
}

// An accepted answer that does not fit the requested schema is never
// sent: the server gets -32603 (legacy), the call fails (modern).
func TestElicitationAnswerCheckedAgainstTheSchema(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			c := dialTest(t, []string{"-era", era}, elicitCaps, WithServerRequestHandler(func(context.Context, *ServerRequest) (any, error) {
				return &handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": 42}}, nil
			}))
			res, err := c.CallTool(t.Context(), "ask", nil)
			if era == "modern" {
				require.ErrorIs(t, err, ErrInputRequest)
				assert.ErrorContains(t, err, `does not match the requested schema: the field "name": want a string, got 42`)
				return
			}
			require.NoError(t, err)
			assert.True(t, res.IsError)
			assert.Contains(t, res.Text(), `elicitation failed: internal error: the client's answer to elicitation/create does not match the requested schema`)
		})
	}
}

const samplingParams = `{"messages":[{"role":"user","content":{"type":"text","text":"weather in Paris?"}},
	{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"weather","input":{"city":"Paris"}}]},
	{"role":"user","content":[{"type":"tool_result","toolUseId":"t1","content":[{"type":"text","text":"sunny"}]}]}],
	"maxTokens":100,"tools":[{"name":"weather","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}`

// typedHandler answers sampling and roots with typed results.
func typedHandler(t *testing.T) ServerRequestHandler {
	return func(_ context.Context, req *ServerRequest) (any, error) {
		switch req.Method {
		case "sampling/createMessage":
			p, err := req.Sampling()
			if err != nil {
				return nil, err
			}
			assert.Len(t, p.Messages, 3)
			assert.Equal(t, "weather in Paris?", p.Messages[0].Content[0].Text, "one block decodes")
			assert.Equal(t, "tool_use", p.Messages[1].Content[0].Type, "an array decodes")
			assert.JSONEq(t, `{"city":"Paris"}`, string(p.Messages[1].Content[0].Input))
			assert.Equal(t, "t1", p.Messages[2].Content[0].ToolUseID)
			if assert.Len(t, p.Tools, 1) {
				assert.Equal(t, "weather", p.Tools[0].Name)
			}
			assert.Equal(t, "auto", p.ToolChoice.Mode)
			return &handlers.CreateMessageResult{Role: "assistant", Model: "test-model", StopReason: "endTurn",
				Content: handlers.SamplingContents{{Type: "text", Text: "It is sunny."}}}, nil
		case "roots/list":
			return &handlers.ListRootsResult{Roots: []handlers.Root{{URI: "file:///work", Name: "work"}}}, nil
		}
		return nil, &Error{Code: CodeMethodNotFound, Message: req.Method}
	}
}

const (
	wantSampling = `{"role":"assistant","content":{"type":"text","text":"It is sunny."},"model":"test-model","stopReason":"endTurn"}`
	wantRoots    = `{"roots":[{"uri":"file:///work","name":"work"}]}`
)

func TestTypedSamplingAndRootsLegacy(t *testing.T) {
	c := dialTest(t, []string{"-era", "legacy"}, WithServerRequestHandler(typedHandler(t)))
	for method, want := range map[string]string{"sampling/createMessage": wantSampling, "roots/list": wantRoots} {
		raw, err := c.Request(t.Context(), "test/serverRequest", map[string]any{"method": method, "params": json.RawMessage(samplingParams)})
		require.NoError(t, err)
		var out struct {
			Responses []struct {
				Result json.RawMessage `json:"result"`
			} `json:"responses"`
		}
		require.NoError(t, json.Unmarshal(raw, &out))
		require.Len(t, out.Responses, 1)
		assert.JSONEq(t, want, string(out.Responses[0].Result), method)
	}
}

func TestTypedSamplingAndRootsModern(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"}, WithMaxInputRounds(1), WithServerRequestHandler(typedHandler(t)))
	_, err := c.requestWithInput(t.Context(), "test/echo", map[string]any{
		"resultType": "input_required",
		"inputRequests": map[string]any{
			"s": map[string]any{"method": "sampling/createMessage", "params": json.RawMessage(samplingParams)},
			"r": map[string]any{"method": "roots/list"},
		},
	}, nil)
	require.ErrorIs(t, err, ErrTooManyInputRounds)
	echoes := seen(t, c, "test/echo")
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	require.NoError(t, json.Unmarshal(echoes[len(echoes)-1].Params, &p))
	assert.JSONEq(t, wantSampling, string(p.InputResponses["s"]))
	assert.JSONEq(t, wantRoots, string(p.InputResponses["r"]))
}

func TestTypedParamsRejectTheWrongRequest(t *testing.T) {
	_, err := (&ServerRequest{Method: "roots/list"}).Elicitation()
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeInvalidParams, e.Code)
	_, err = (&ServerRequest{Method: "elicitation/create", Params: json.RawMessage(`{"mode":"url","message":"log in"}`)}).Elicitation()
	assert.ErrorContains(t, err, "url mode needs a url and an elicitationId")
	p, err := (&ServerRequest{Method: "elicitation/create", Params: json.RawMessage(
		`{"mode":"url","message":"log in","url":"https://example.com/login","elicitationId":"e1"}`)}).Elicitation()
	require.NoError(t, err)
	assert.Equal(t, "url", p.Mode)
	assert.Equal(t, "e1", p.ElicitationID)
	_, err = (&ServerRequest{Method: "sampling/createMessage", Params: json.RawMessage(`{"messages":[],"maxTokens":1}`)}).Sampling()
	assert.ErrorContains(t, err, "no messages")
	b, err := json.Marshal(&handlers.ListRootsResult{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"roots":[]}`, string(b), "no roots is [], never null")
	b, err = json.Marshal(&handlers.CreateMessageResult{Role: "assistant", Model: "m"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"role":"assistant","content":[],"model":"m"}`, string(b), "no content is [], never null")
}

// An actor answers input requests (modern) and server requests (legacy)
// alike through handlers.ToActor.
func TestToActorAnswersBothEras(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			system := snodoactor.Shared()
			pid := system.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
				if m, ok := ctx.Message().(*handlers.RequestMessage); ok {
					p, err := m.Request.Elicitation()
					if err != nil {
						m.Reply(nil, err)
						return
					}
					m.Reply(&handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": p.Message[len(p.Message)-2 : len(p.Message)-1]}}, nil)
				}
			}))
			defer system.Root.Stop(pid)
			c := dialTest(t, []string{"-era", era}, elicitCaps, WithServerRequestHandler(handlers.ToActor(system, pid)))
			res, err := c.CallTool(t.Context(), "ask", map[string]int{"rounds": 2})
			require.NoError(t, err)
			assert.Equal(t, "Hello, 2!", res.Text(), "the round number, from the typed params")
		})
	}
}

// Typed calls without a requester fail with errNoRequester, never a panic.
func TestCallsWithoutARequester(t *testing.T) {
	for _, c := range []Calls{newCalls(nil, nil), {}} {
		_, err := c.ListTools(t.Context())
		require.ErrorIs(t, err, errNoRequester)
		_, err = c.CallTool(t.Context(), "echo", nil)
		require.ErrorIs(t, err, errNoRequester)
		require.ErrorIs(t, c.Ping(t.Context()), errNoRequester)
	}
}
