package connection

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/jsonrpc"
)

func TestHTTPHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":           "us-west1",
		"two words":          "two words",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
	} {
		assert.Equal(t, want, headerValue(in), "%q", in)
	}
}

func TestHTTPHeaderSpecs(t *testing.T) {
	specs, why := headerSpecs(json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
		"q":{"type":"string"}}}`))
	assert.Empty(t, why)
	assert.ElementsMatch(t, []paramHeader{{name: "Region", path: []string{"region"}}, {name: "N", path: []string{"opts", "n"}}}, specs)
	args := []byte(`{"region":"eu","opts":{"n":42}}`)
	for _, s := range specs {
		v, ok := s.value(args)
		assert.True(t, ok, s.name)
		assert.Equal(t, map[string]string{"Region": "eu", "N": "42"}[s.name], v)
	}
	_, ok := paramHeader{name: "Region", path: []string{"region"}}.value([]byte(`{"region":null}`))
	assert.False(t, ok, "null omits the header")

	for name, schema := range map[string]string{
		"not a token":    `{"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`,
		"empty":          `{"properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		"twice":          `{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`,
		"number":         `{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		"in items":       `{"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`,
		"in composition": `{"properties":{"a":{"anyOf":[{"type":"string","x-mcp-header":"A"}]}}}`,
		"at the root":    `{"type":"string","x-mcp-header":"A"}`,
	} {
		_, why := headerSpecs(json.RawMessage(schema))
		assert.NotEmpty(t, why, name)
	}
}

// A modern request mirrors its method as Mcp-Method; a task's later
// requests carry its id as Mcp-Name (the tasks extension's routing header
// over Streamable HTTP), as a tool call carries its tool's name; other
// requests carry none. A legacy request (its _meta names no version)
// carries neither: the legacy transport has no such headers.
func TestHTTPHeadersName(t *testing.T) {
	p := &httpPeer{tools: map[string][]paramHeader{}, names: map[string]nameValue{}}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, tc := range []struct{ line, name string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},` + meta + `}}`, "echo"},
		{`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a",` + meta + `}}`, "file:///a"},
		{`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"786512e2",` + meta + `}}`, "786512e2"},
		{`{"jsonrpc":"2.0","id":4,"method":"tasks/update","params":{"taskId":"t 1","inputResponses":{},` + meta + `}}`, "t 1"},
		{`{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"Zürich",` + meta + `}}`, "=?base64?WsO8cmljaA==?="},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{` + meta + `}}`, ""},
		{`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":7,` + meta + `}}`, ""},
	} {
		env, err := jsonrpc.Scan([]byte(tc.line))
		require.NoError(t, err, tc.line)
		h := p.messageHeaders(&env)
		assert.Equal(t, tc.name, h.Get(headerName), tc.line)
		assert.Equal(t, env.MethodName(), h.Get(headerMethod), tc.line)
		assert.Equal(t, modernVersion, h.Get(headerVersion), tc.line)
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":9}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"taskId":"786512e2"}}`,
	} {
		env, err := jsonrpc.Scan([]byte(line))
		require.NoError(t, err, line)
		assert.Empty(t, p.messageHeaders(&env), line)
	}
}
