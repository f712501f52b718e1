package oauth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/oauth"
	"github.com/snodo/snodo/test/oauthserver"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// get sends one GET through tr and returns the status and body.
func get(t *testing.T, tr http.RoundTripper, u string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	return send(tr, req)
}

func send(tr http.RoundTripper, req *http.Request) (int, string, error) {
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func codeFlow(cfg oauth.Config) oauth.Config {
	cfg.Authorize = oauthserver.Consent
	return cfg
}

func TestAuthorizationCodeFlow(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.IssSupported = true; a.ScopesSupported = []string{"mcp", "offline_access"} })
	rs := oauthserver.NewResource(t, as, func(s *oauthserver.Resource) { s.Challenge = "mcp" })
	store := &oauth.MemoryStore{}
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{Store: store}))
	require.NoError(t, err)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, rs.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	status, body, err := send(tr, req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", body)

	auths, tokens, regs := as.Counts()
	assert.Equal(t, 1, auths)
	assert.Equal(t, 1, tokens)
	assert.Equal(t, 1, regs)
	q := as.AuthRequests[0]
	assert.Equal(t, rs.URL(), q.Get("resource"), "resource on the authorization request")
	assert.Equal(t, "S256", q.Get("code_challenge_method"))
	assert.Equal(t, "mcp offline_access", q.Get("scope"), "the challenge's scope, and offline_access the server offers")
	assert.Equal(t, rs.URL(), as.TokenForms[0].Get("resource"), "resource on the token request")

	saved, err := store.Load(t.Context(), rs.URL())
	require.NoError(t, err)
	require.NotNil(t, saved)
	assert.Equal(t, as.URL(), saved.Issuer)

	// The next request uses the token without another authorization.
	status, _, err = get(t, tr, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	auths, _, _ = as.Counts()
	assert.Equal(t, 1, auths)
}

func TestRefreshWithoutTheUser(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true })
	rs := oauthserver.NewResource(t, as, nil)
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{}))
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	as.Revoke()
	status, _, err = get(t, tr, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	auths, tokens, _ := as.Counts()
	assert.Equal(t, 1, auths, "a refresh token works: the user is not asked again")
	assert.Equal(t, 2, tokens)
	assert.Equal(t, "refresh_token", as.TokenForms[1].Get("grant_type"))
	assert.Equal(t, rs.URL(), as.TokenForms[1].Get("resource"), "resource on the refresh request too")
}

func TestStepUpAddsScopesAndIsBounded(t *testing.T) {
	as := oauthserver.NewAS(t, nil)
	rs := oauthserver.NewResource(t, as, func(s *oauthserver.Resource) { s.Challenge = "read" })
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{}))
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL()+"?need=read")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	status, _, err = get(t, tr, rs.URL()+"?need=write")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "read write", as.AuthRequests[1].Get("scope"), "a step-up keeps the scopes requested before")

	// A server whose 403 never ends: the request gives up after
	// MaxStepUps re-authorizations and returns the 403.
	as.GrantScopes = []string{"nothing"}
	before, _, _ := as.Counts()
	status, _, err = get(t, tr, rs.URL()+"?need=admin")
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, status)
	after, _, _ := as.Counts()
	assert.Equal(t, 2, after-before)
}

func TestConcurrent401sAuthorizeOnce(t *testing.T) {
	as := oauthserver.NewAS(t, nil)
	rs := oauthserver.NewResource(t, as, nil)
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{}))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			status, _, err := get(t, tr, rs.URL())
			assert.NoError(t, err)
			assert.Equal(t, http.StatusOK, status)
		})
	}
	wg.Wait()
	auths, _, regs := as.Counts()
	assert.Equal(t, 1, auths)
	assert.Equal(t, 1, regs)
}

func TestNoTokenToAnotherHost(t *testing.T) {
	as := oauthserver.NewAS(t, nil)
	rs := oauthserver.NewResource(t, as, nil)
	other := oauthserver.NewResource(t, as, nil)
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{}))
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	status, _, err = get(t, tr, other.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, status, "the other server's 401 is returned as is")
	headers := other.RequestHeaders()
	require.Len(t, headers, 1)
	assert.Empty(t, headers[0].Get("Authorization"), "no token went to a host it was not issued for")
	auths, _, _ := as.Counts()
	assert.Equal(t, 1, auths, "no authorization for another host")
}

func TestClientCredentialsBasic(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.AuthMethods = []string{"client_secret_basic"} })
	rs := oauthserver.NewResource(t, as, nil)
	tr, err := oauth.NewTransport(rs.URL(), nil, oauth.Config{
		Client:            oauth.Client{ID: "svc", Secret: "svc-secret"},
		ClientCredentials: &oauth.ClientCredentials{},
	})
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "client_credentials", as.TokenForms[0].Get("grant_type"))
	assert.Equal(t, rs.URL(), as.TokenForms[0].Get("resource"))
}

func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.AssertionKey = key.Public() })
	rs := oauthserver.NewResource(t, as, nil)
	tr, err := oauth.NewTransport(rs.URL(), nil, oauth.Config{
		Client:            oauth.Client{ID: "svc"},
		ClientCredentials: &oauth.ClientCredentials{PrivateKey: key},
	})
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", as.TokenForms[0].Get("client_assertion_type"))
}

func TestJWTBearerRefusalIsNotRetried(t *testing.T) {
	as := oauthserver.NewAS(t, nil)
	rs := oauthserver.NewResource(t, as, nil)
	assertion := "workload-jwt"
	tr, err := oauth.NewTransport(rs.URL(), nil, oauth.Config{
		Client:    oauth.Client{ID: "workload"},
		JWTBearer: func(context.Context) (string, error) { return assertion, nil },
	})
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)

	as.Revoke()
	assertion = "expired-jwt"
	_, _, err = get(t, tr, rs.URL())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused the JWT-bearer grant (HTTP 400): invalid_grant")
	_, tokens, _ := as.Counts()
	assert.Equal(t, 2, tokens, "one refused request, no retry and no other grant")
}

func TestDPoPWithNonces(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.DPoPNonce = "n-1" })
	rs := oauthserver.NewResource(t, as, func(s *oauthserver.Resource) { s.DPoP = true })
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{DPoP: &oauth.DPoP{}}))
	require.NoError(t, err)
	status, body, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status, body)
	// The token request was retried once with the nonce; the resource
	// request too.
	_, tokens, _ := as.Counts()
	assert.Equal(t, 2, tokens)
	assert.Equal(t, "n-1", oauthserver.DPoPClaim(as.TokenHeaders[1].Get("DPoP"), "nonce"))
	status, _, err = get(t, tr, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status, "the nonce is remembered")
}

// TestBadInputIsNamed: each malformed document, refused response or
// unsafe URL stops the authorization with an error that says what was
// wrong, and no token request follows a refused authorization response.
func TestBadInputIsNamed(t *testing.T) {
	cases := []struct {
		name   string
		as     func(*oauthserver.AS)
		rs     func(*oauthserver.Resource)
		cfg    func(*oauth.Config)
		want   string
		tokens int
	}{
		{name: "malformed resource metadata", rs: func(s *oauthserver.Resource) { s.PRMMalformed = true }, want: "protected resource metadata"},
		{name: "resource of another server", rs: func(s *oauthserver.Resource) { s.PRMResource = "https://evil.example.com/mcp" }, want: `its resource "https://evil.example.com/mcp" is not the MCP server`},
		{name: "malformed server metadata", as: func(a *oauthserver.AS) { a.Malformed = true }, want: "is not a JSON object"},
		{name: "wrong issuer in metadata", as: func(a *oauthserver.AS) { a.Issuer = "https://attacker.example.com" }, want: `names issuer "https://attacker.example.com"`},
		{name: "no PKCE", as: func(a *oauthserver.AS) { a.NoPKCE = true }, want: "refusing to authorize without PKCE"},
		{name: "wrong iss", as: func(a *oauthserver.AS) { a.IssMode = "wrong" }, want: `comes from issuer "https://evil.example.com"`},
		{name: "normalized iss", as: func(a *oauthserver.AS) { a.IssMode = "slash"; a.IssSupported = true }, want: "refusing it (RFC 9207)"},
		{name: "missing iss", as: func(a *oauthserver.AS) { a.IssMode = "omit"; a.IssSupported = true }, want: "lacks the iss parameter"},
		{name: "token endpoint error", as: func(a *oauthserver.AS) { a.TokenError = "invalid_grant" }, want: "refused the authorization_code grant (HTTP 400): invalid_grant: the test says no", tokens: 1},
		{name: "no way to register", as: func(a *oauthserver.AS) { a.NoRegistration = true }, want: "no client is pre-registered"},
		{name: "state mismatch", cfg: func(c *oauth.Config) {
			c.Authorize = func(ctx context.Context, u string) (url.Values, error) {
				q, err := oauthserver.Consent(ctx, u)
				q.Set("state", "forged")
				return q, err
			}
		}, want: "state does not match"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := oauthserver.NewAS(t, tc.as)
			rs := oauthserver.NewResource(t, as, tc.rs)
			cfg := codeFlow(oauth.Config{})
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			tr, err := oauth.NewTransport(rs.URL(), nil, cfg)
			require.NoError(t, err)
			_, _, err = get(t, tr, rs.URL())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, tokens, _ := as.Counts()
			assert.Equal(t, tc.tokens, tokens, "token requests")
		})
	}
}

func TestUnsafeURLsAreRefused(t *testing.T) {
	_, err := oauth.NewTransport("http://mcp.example.com/mcp", nil, codeFlow(oauth.Config{}))
	assert.ErrorContains(t, err, "plain HTTP to a host that is not loopback")
	_, err = oauth.NewTransport("https://mcp.example.com/mcp", nil, codeFlow(oauth.Config{RedirectURL: "http://example.com/cb"}))
	assert.ErrorContains(t, err, "redirect URL http://example.com/cb is plain HTTP")
	_, err = oauth.NewTransport("https://mcp.example.com/mcp", nil, oauth.Config{})
	assert.ErrorContains(t, err, "needs an Authorize function")
}

// TestSecretsNeverReachLogsOrErrors runs successful and failing flows
// with a debug logger and checks that no token, refresh token or client
// secret appears in the log or in an error.
func TestSecretsNeverReachLogsOrErrors(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var errs []string
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) {
		a.Refresh = true
		a.ClientSecret = "SECRETCLIENT"
		a.AuthMethods = []string{"client_secret_post"}
	})
	rs := oauthserver.NewResource(t, as, nil)
	store := &oauth.MemoryStore{}
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{Logger: logger, Store: store}))
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	tok, _ := store.Load(t.Context(), rs.URL())
	logger.Info("stored", "token", tok, "client", tok.Client)
	errs = append(errs, tok.String(), tok.Client.String())

	as.Revoke()
	as.TokenError = "invalid_grant"
	_, _, err = get(t, tr, rs.URL())
	require.Error(t, err)
	errs = append(errs, err.Error())

	all := logs.String() + strings.Join(errs, "\n")
	assert.Contains(t, all, "oauth: refresh failed", "the log has the steps")
	for _, secret := range []string{"SECRETTOKEN", "SECRETREFRESH", "SECRETCLIENT"} {
		assert.NotContains(t, all, secret)
	}
}

func TestStoredTokenIsUsedAndExpiredOneRefreshed(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true; a.ExpiresIn = 3600 })
	rs := oauthserver.NewResource(t, as, nil)
	store := &oauth.MemoryStore{}
	tr, err := oauth.NewTransport(rs.URL(), nil, codeFlow(oauth.Config{Store: store}))
	require.NoError(t, err)
	status, _, err := get(t, tr, rs.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	// The hour-long token has 30 s left: less than its margin (a minute).
	tok, _ := store.Load(t.Context(), rs.URL())
	tok.Issued, tok.Expiry = time.Now().Add(-time.Hour), time.Now().Add(30*time.Second)
	require.NoError(t, store.Save(t.Context(), rs.URL(), tok))

	// A second transport (a new run) finds the stored token; it expires
	// within its margin, so it is refreshed before it is sent.
	called := false
	tr2, err := oauth.NewTransport(rs.URL(), nil, oauth.Config{Store: store, Authorize: func(context.Context, string) (url.Values, error) {
		called = true
		return nil, errors.New("no user here")
	}})
	require.NoError(t, err)
	status, _, err = get(t, tr2, rs.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.False(t, called)
	assert.Equal(t, "refresh_token", as.TokenForms[len(as.TokenForms)-1].Get("grant_type"))
	tok, _ = store.Load(t.Context(), rs.URL())
	assert.WithinDuration(t, time.Now().Add(time.Hour), tok.Expiry, 5*time.Second)
}
