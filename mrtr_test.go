package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nameHandler answers elicitation/create with the names in order and
// counts its calls.
func nameHandler(calls *atomic.Int32, names ...string) ServerRequestHandler {
	return func(ctx context.Context, req *ServerRequest) (any, error) {
		if req.Method != "elicitation/create" {
			return nil, &Error{Code: CodeMethodNotFound, Message: req.Method}
		}
		n := calls.Add(1)
		return map[string]any{"action": "accept", "content": map[string]string{"name": names[int(n-1)%len(names)]}}, nil
	}
}

var elicitCaps = WithClientCapabilities(ClientCapabilities{Elicitation: &ElicitationCapability{}})

// The ask tool asks for a name in every round: as input_required results
// (modern) or as pushed elicitation/create requests (legacy). Either way
// the same handler answers and the caller sees only the final result.
func TestAskCompletesThroughHandlerInBothEras(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			var calls atomic.Int32
			c := dialTest(t, []string{"-era", era}, elicitCaps, WithServerRequestHandler(nameHandler(&calls, "Ada", "Grace", "Linus")))
			res, err := c.CallTool(t.Context(), "ask", map[string]int{"rounds": 3})
			require.NoError(t, err)
			assert.False(t, res.IsError, res.Text())
			assert.Equal(t, "Hello, Linus!", res.Text())
			assert.Equal(t, int32(3), calls.Load())
		})
	}
}

func TestMRTRRetriesUnderNewIDsWithExactState(t *testing.T) {
	var calls atomic.Int32
	c := dialTest(t, []string{"-era", "modern"}, elicitCaps, WithServerRequestHandler(nameHandler(&calls, "Ada")))
	_, err := c.CallTool(t.Context(), "ask", map[string]int{"rounds": 2})
	require.NoError(t, err)

	calls3 := seen(t, c, "tools/call")
	require.Len(t, calls3, 3)
	ids := map[string]bool{}
	for i, r := range calls3 {
		ids[string(r.ID)] = true
		var p struct {
			Name           string                     `json:"name"`
			Arguments      json.RawMessage            `json:"arguments"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			RequestState   *string                    `json:"requestState"`
		}
		require.NoError(t, json.Unmarshal(r.Params, &p))
		assert.Equal(t, "ask", p.Name)
		assert.JSONEq(t, `{"rounds":2}`, string(p.Arguments), "the original arguments are resent")
		assert.Contains(t, metaOf(t, r.Params), metaProtocolVersion, "every retry carries _meta")
		if i == 0 {
			assert.Nil(t, p.RequestState)
			assert.Nil(t, p.InputResponses)
			continue
		}
		require.NotNil(t, p.RequestState, "retry %d", i)
		assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada"}}`, string(p.InputResponses["name"]))
	}
	assert.Len(t, ids, 3, "each round is a new request with a new ID")
}

func TestMRTRWithoutHandlerSaysWhatToDo(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"})
	_, err := c.CallTool(t.Context(), "ask", nil)
	require.ErrorIs(t, err, ErrInputRequest)
	assert.Contains(t, err.Error(), "WithServerRequestHandler")
	assert.Contains(t, err.Error(), "elicitation/create")
}

func TestMRTRHandlerPanicFailsTheCall(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"}, WithServerRequestHandler(func(context.Context, *ServerRequest) (any, error) {
		panic("boom")
	}))
	_, err := c.CallTool(t.Context(), "ask", nil)
	require.ErrorIs(t, err, ErrInputRequest)
	assert.Contains(t, err.Error(), "boom")
}

func TestMRTRDeclineIsAToolResult(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"}, WithServerRequestHandler(func(context.Context, *ServerRequest) (any, error) {
		return map[string]string{"action": "decline"}, nil
	}))
	res, err := c.CallTool(t.Context(), "ask", nil)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "no name given: decline", res.Text())
}

func TestMRTRRoundsAreBounded(t *testing.T) {
	var calls atomic.Int32
	c := dialTest(t, []string{"-era", "modern"}, WithMaxInputRounds(2), WithServerRequestHandler(nameHandler(&calls, "Ada")))
	_, err := c.CallTool(t.Context(), "ask", map[string]int{"rounds": 5})
	require.ErrorIs(t, err, ErrTooManyInputRounds)
	assert.Contains(t, err.Error(), "WithMaxInputRounds")
	assert.Equal(t, int32(2), calls.Load())
}

// test/echo answers its params as the result, which lets a test choose
// the resultType the client sees.
func TestResultTypes(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"}, WithMaxInputRounds(3), WithServerRequestHandler(func(_ context.Context, req *ServerRequest) (any, error) {
		return map[string]string{"method": req.Method, "key": string(req.ID)}, nil
	}))
	ctx := t.Context()

	_, err := c.requestWithInput(ctx, "test/echo", map[string]any{"resultType": "banana"}, nil)
	require.ErrorIs(t, err, ErrUnknownResultType)
	assert.Contains(t, err.Error(), "banana")
	_, err = c.completeRequest(ctx, "test/echo", map[string]any{"resultType": "banana"}, nil)
	require.ErrorIs(t, err, ErrUnknownResultType)

	raw, err := c.requestWithInput(ctx, "test/echo", map[string]any{"x": 1}, nil)
	require.NoError(t, err, "an absent resultType means complete")
	assert.Contains(t, string(raw), `"x":1`)

	_, err = c.completeRequest(ctx, "test/echo", map[string]any{"resultType": "input_required"}, nil)
	assert.ErrorContains(t, err, "does not allow", "only tools/call, resources/read and prompts/get may ask for input")

	// The echo keeps asking: the state goes back byte for byte each round
	// and the handler's answers travel under the server's keys.
	params := map[string]any{
		"resultType":    "input_required",
		"inputRequests": map[string]any{"k1": map[string]any{"method": "roots/list"}},
		"requestState":  "opaque \u00e9 state",
	}
	_, err = c.requestWithInput(ctx, "test/echo", params, nil)
	require.ErrorIs(t, err, ErrTooManyInputRounds)
	echoes := seen(t, c, "test/echo")
	last := echoes[len(echoes)-1]
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   string                     `json:"requestState"`
	}
	require.NoError(t, json.Unmarshal(last.Params, &p))
	assert.Equal(t, "opaque \u00e9 state", p.RequestState)
	assert.JSONEq(t, `{"method":"roots/list","key":"\"k1\""}`, string(p.InputResponses["k1"]))

	_, err = c.requestWithInput(ctx, "test/echo", map[string]any{"resultType": "input_required"}, nil)
	assert.ErrorContains(t, err, "neither inputRequests nor requestState")
}

// Server-to-client requests: ping is answered by the client itself,
// without a user handler; anything else without a handler gets -32601.
func TestServerRequestsWithoutHandler(t *testing.T) {
	c := dialTest(t, []string{"-era", "legacy"})
	for method, want := range map[string]string{
		"ping":                   `"result":{}`,
		"sampling/createMessage": `"code":-32601`,
	} {
		raw, err := c.Request(t.Context(), "test/serverRequest", map[string]any{"method": method})
		require.NoError(t, err)
		assert.Contains(t, string(raw), want, method)
	}
}

func TestServerPingIsAnsweredBeforeTheUserHandler(t *testing.T) {
	var calls atomic.Int32
	c := dialTest(t, []string{"-era", "legacy"}, WithServerRequestHandler(func(_ context.Context, req *ServerRequest) (any, error) {
		calls.Add(1)
		return nil, fmt.Errorf("handler saw %s", req.Method)
	}))
	raw, err := c.Request(t.Context(), "test/serverRequest", map[string]any{"method": "ping"})
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"result":{}`)
	assert.Zero(t, calls.Load())
}
