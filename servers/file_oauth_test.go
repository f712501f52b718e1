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
		"oauth": {"clientId": "c1", "scopes": ["a", "b"], "callbackUrl": "x"}}}}`))
	require.NoError(t, err)
	s, err := f.Lookup("web")
	require.NoError(t, err)
	require.NotNil(t, s.OAuth)
	assert.Equal(t, "c1", s.OAuth.ClientID)
	assert.Equal(t, []string{"a", "b"}, s.OAuth.Scopes)
	assert.Contains(t, f.Warnings[0], "oauth.callbackUrl")

	_, err = Parse("mcp.json", []byte(`{"mcpServers": {"cmd": {"command": "x", "oauth": {"clientId": "c1"}}}}`))
	assert.ErrorContains(t, err, "only an http server")
	_, err = Parse("mcp.json", []byte(`{"mcpServers": {"web": {"url": "https://example.com/mcp", "oauth": {"scopes": "a b"}}}}`))
	assert.ErrorContains(t, err, "oauth.scopes")
}

// A confidential client's secret comes from the environment variable
// "clientSecretEnv" names, never from the file; "callbackPort" fixes the
// redirect URL at http://localhost:PORT/callback.
func TestParseOAuthSecretAndCallbackPort(t *testing.T) {
	t.Setenv("SNODO_TEST_SECRET", "s3cret")
	f, err := Parse("mcp.json", []byte(`{"mcpServers": {"web": {"type": "http", "url": "https://example.com/mcp",
		"oauth": {"clientId": "c1", "clientSecretEnv": "SNODO_TEST_SECRET", "callbackPort": 8080}}}}`))
	require.NoError(t, err)
	s, err := f.Lookup("web")
	require.NoError(t, err)
	assert.Equal(t, "s3cret", s.OAuth.ClientSecret)
	assert.Equal(t, "http://localhost:8080/callback", s.OAuth.RedirectURL)
	assert.Empty(t, f.Warnings)

	for body, want := range map[string]string{
		`{"clientId": "c1", "clientSecretEnv": "SNODO_TEST_UNSET_SECRET"}`: "SNODO_TEST_UNSET_SECRET, which should hold the client secret, is not set",
		`{"clientId": "c1", "clientSecretEnv": ""}`:                        "want the name of an environment variable",
		`{"clientId": "c1", "clientSecret": "inline"}`:                     "a secret is not written in the file",
		`{"clientId": "c1", "callbackPort": 0}`:                            "want a port from 1 to 65535",
		`{"clientId": "c1", "callbackPort": "8080"}`:                       "oauth.callbackPort",
	} {
		_, err := Parse("mcp.json", []byte(`{"mcpServers": {"web": {"url": "https://example.com/mcp", "oauth": `+body+`}}}`))
		assert.ErrorContains(t, err, want, body)
		if err != nil {
			assert.NotContains(t, err.Error(), "inline", "the error quotes no secret")
		}
	}
}
