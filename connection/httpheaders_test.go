package connection

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
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
