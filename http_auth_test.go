package snodo

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/httpserver"
	"github.com/snodo/snodo/test/oauthserver"
)

// TestHTTPOAuthAgainstAProtectedServer puts snodo's HTTP test server
// behind the test authorization server's protected resource: ConnectHTTP
// authorizes on the first 401 (discovery, registration, the user's step,
// the token), and a second connection made with the same option (a
// supervised client's new session) refreshes the token without asking
// the user again.
func TestHTTPOAuthAgainstAProtectedServer(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true })
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "modern"} })

	var asked atomic.Int32
	auth := WithOAuth(OAuth{Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
		asked.Add(1)
		return oauthserver.Consent(ctx, authURL)
	}})
	connect := func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		c, err := ConnectHTTP(ctx, rs.URL(), auth)
		require.NoError(t, err)
		defer c.Close()
		tools, err := c.ListTools(ctx)
		require.NoError(t, err)
		assert.NotEmpty(t, tools)
	}
	connect()
	assert.Equal(t, int32(1), asked.Load())
	auths, tokens, regs := as.Counts()
	assert.Equal(t, []int{1, 1, 1}, []int{auths, tokens, regs})

	as.Revoke()
	connect()
	assert.Equal(t, int32(1), asked.Load(), "the refresh token works: the user is not asked again")
	_, tokens, _ = as.Counts()
	assert.Equal(t, 2, tokens)
	assert.Equal(t, "refresh_token", as.TokenForms[1].Get("grant_type"))
}
