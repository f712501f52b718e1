package servers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An http entry's "oauth" object gives its client id and scopes; on a
// command entry it is an error, and an unknown member a warning.
func TestParseOAuthBlock(t *testing.T) {
	f, err := Parse("mcp.json", []byte(`{"mcpServers": {"web": {"type": "http", "url": "https://example.com/mcp",
		"oauth": {"clientId": "c1", "scopes": ["a", "b"], "callbackPort": 8080}}}}`))
	require.NoError(t, err)
	s, err := f.Lookup("web")
	require.NoError(t, err)
	require.NotNil(t, s.OAuth)
	assert.Equal(t, "c1", s.OAuth.ClientID)
	assert.Equal(t, []string{"a", "b"}, s.OAuth.Scopes)
	assert.Contains(t, f.Warnings[0], "oauth.callbackPort")

	_, err = Parse("mcp.json", []byte(`{"mcpServers": {"cmd": {"command": "x", "oauth": {"clientId": "c1"}}}}`))
	assert.ErrorContains(t, err, "only an http server")
	_, err = Parse("mcp.json", []byte(`{"mcpServers": {"web": {"url": "https://example.com/mcp", "oauth": {"scopes": "a b"}}}}`))
	assert.ErrorContains(t, err, "oauth.scopes")
}
