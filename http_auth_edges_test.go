package snodo

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/oauth"
	"github.com/snodo/snodo/test/httpserver"
	"github.com/snodo/snodo/test/oauthserver"
)

// countingLogin is an OAuth whose interactive step is counted and
// consents through the test authorization server, or fails with fail.
func countingLogin(store TokenStore, fail error) (OAuth, *atomic.Int32) {
	var asked atomic.Int32
	return OAuth{Store: store, Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
		asked.Add(1)
		if fail != nil {
			return nil, fail
		}
		return oauthserver.Consent(ctx, authURL)
	}}, &asked
}

// A token that lives 30 s is refreshed 3 s before its expiry, not before
// every request: five calls, one token request (the login's).
func TestOAuthShortLivedTokenIsNotRefreshedBeforeEveryRequest(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true; a.ExpiresIn = 30 })
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "modern"} })
	o, asked := countingLogin(nil, nil)
	c, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o))
	require.NoError(t, err)
	defer func() { _ = c.Close(); <-c.Done() }()
	for range 5 {
		_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), asked.Load())
	assert.Equal(t, []string{"authorization_code"}, as.GrantTypes(), "a refresh before a request")
}

// When the early refresh fails (the refresh token was revoked), the
// token there is is sent, and the user is not asked: four calls, no
// login, one refresh tried. Only the server's 401, once the access token
// is revoked too, leads to a login: one, for the next call.
func TestOAuthFailedEarlyRefreshSendsTheTokenItHas(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true; a.ExpiresIn = 3600 })
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "modern"} })
	store := &oauth.MemoryStore{}
	o, asked := countingLogin(store, nil)
	first, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o))
	require.NoError(t, err)
	require.NoError(t, first.Close())
	<-first.Done()
	require.Equal(t, int32(1), asked.Load())

	// The stored hour-long token now has 20 s left (within its minute's
	// margin), and its refresh token is revoked.
	key, _ := oauth.StoreKey(rs.URL())
	tok, err := store.Load(t.Context(), key)
	require.NoError(t, err)
	tok.Issued, tok.Expiry = time.Now().Add(-time.Hour), time.Now().Add(20*time.Second)
	require.NoError(t, store.Save(t.Context(), key, tok))
	as.RevokeRefresh()

	c, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o))
	require.NoError(t, err)
	defer func() { _ = c.Close(); <-c.Done() }()
	for range 4 {
		_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), asked.Load(), "a failed early refresh asked the user")
	assert.Equal(t, []string{"authorization_code", "refresh_token"}, as.GrantTypes(), "one refresh tried, not one per request")

	as.Revoke()
	_, err = c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	_, err = c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	assert.Equal(t, int32(2), asked.Load(), "the 401 led to one login")
}

// A login that fails while connecting is asked for once, by the
// server/discover probe, and its error is the one reported: initialize
// does not ask again. A server that answers 401 to a fresh token also
// costs one login per connection attempt.
func TestOAuthOneLoginPerConnectionAttempt(t *testing.T) {
	t.Run("the user refuses", func(t *testing.T) {
		as := oauthserver.NewAS(t, nil)
		rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "legacy"} })
		o, asked := countingLogin(nil, errors.New("the user closed the browser"))
		_, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o))
		require.Error(t, err)
		assert.ErrorContains(t, err, "the user closed the browser")
		assert.NotContains(t, err.Error(), "initialize", "the probe's error is reported")
		assert.Equal(t, int32(1), asked.Load())
	})
	t.Run("the server refuses every token", func(t *testing.T) {
		as := oauthserver.NewAS(t, nil)
		rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.RejectAll = true })
		o, asked := countingLogin(nil, nil)
		_, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o))
		require.Error(t, err)
		assert.ErrorContains(t, err, "401")
		assert.Equal(t, int32(1), asked.Load())
	})
}

// Requests that meet a 401 together share one login, and its failure:
// the user is asked once, not once per request.
func TestOAuthConcurrentRequestsShareAFailedLogin(t *testing.T) {
	as := oauthserver.NewAS(t, nil)
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "modern"} })
	gate := make(chan struct{})
	var asked atomic.Int32
	o := OAuth{Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
		if asked.Add(1) == 1 {
			return oauthserver.Consent(ctx, authURL)
		}
		<-gate // the second login, after the revocation: held until every call waits on it
		return nil, errors.New("the user closed the browser")
	}}
	c, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o), WithTimeout(20*time.Second))
	require.NoError(t, err)
	defer func() { _ = c.Close(); <-c.Done() }()
	as.Revoke()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return asked.Load() == 2 }, 10*time.Second, 5*time.Millisecond)
	// Give the other calls their 401 before the login fails: they queue
	// behind it (rs counts the requests it refused).
	require.Eventually(t, func() bool { return len(rs.RequestHeaders()) >= 2+4 }, 10*time.Second, 5*time.Millisecond)
	close(gate)
	for range 4 {
		assert.ErrorContains(t, <-errs, "the user closed the browser")
	}
	assert.Equal(t, int32(2), asked.Load(), "one login for the four calls")
}

// The bearer token never leaves the MCP endpoint's origin: a call
// redirected to another port of the same host arrives there without it.
func TestOAuthTokenDoesNotFollowARedirectToAnotherPort(t *testing.T) {
	other := newRecorder(t)
	as := oauthserver.NewAS(t, nil)
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) {
		r.Handler = &httpserver.HTTP{Era: "modern", Misbehave: "redirect-away", RedirectTo: other.srv.URL + "/mcp"}
	})
	o, _ := countingLogin(nil, nil)
	c, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o))
	require.NoError(t, err)
	defer func() { _ = c.Close(); <-c.Done() }()
	res, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "elsewhere", res.Text())
	seen := other.seen()
	require.NotEmpty(t, seen)
	for _, h := range seen {
		assert.Empty(t, h.Get("Authorization"), "the token went to another origin")
	}
}

// What a server writes in its WWW-Authenticate reaches the error escaped
// and bounded: a challenge whose resource_metadata holds ESC and BEL
// (Go's client refuses the header, quoting it) and one whose URL, not
// found, is 20 KiB long.
func TestOAuthChallengeTextInErrorsIsOneLine(t *testing.T) {
	as := oauthserver.NewAS(t, nil)
	for name, prm := range map[string]string{
		"escapes":  as.URL() + "/nowhere/\x1b]0;pwned\x07\t" + strings.Repeat("a", 20<<10),
		"long URL": as.URL() + "/nowhere/" + strings.Repeat("a", 20<<10),
	} {
		t.Run(name, func(t *testing.T) {
			rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.ResourceMetadata = prm })
			o, asked := countingLogin(nil, nil)
			_, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o), WithEra(EraModern))
			require.Error(t, err)
			msg := err.Error()
			for _, raw := range []string{"\x1b", "\x07", "\t", "\n"} {
				assert.NotContains(t, msg, raw)
			}
			if name == "long URL" {
				assert.Contains(t, msg, `named by the server's WWW-Authenticate was not found`)
			}
			assert.Less(t, len(msg), 3000, "bounded: %d bytes", len(msg))
			assert.Zero(t, asked.Load())
		})
	}
}

// An authorization server's error_description reaches the error on one
// line, escaped: it cannot write a line of its own into the terminal.
func TestOAuthServerTextInErrorsIsOneLine(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) {
		a.TokenError = "invalid_grant"
		a.TokenErrorDescription = "bad code\nsnodo: all good, token saved\x1b[2J\u009b\xff"
	})
	rs := oauthserver.NewResource(t, as, nil)
	o, _ := countingLogin(nil, nil)
	_, err := ConnectHTTP(t.Context(), rs.URL(), WithOAuth(o), WithEra(EraModern))
	require.Error(t, err)
	msg := err.Error()
	for _, raw := range []string{"\n", "\x1b", "\u009b", "\xff"} {
		assert.NotContains(t, msg, raw)
	}
	assert.True(t, strings.Contains(msg, `bad code\x0asnodo: all good`), msg)
}
