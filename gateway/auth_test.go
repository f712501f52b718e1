package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/gateway"
)

// issuer is an OAuth issuer on loopback: its authorization server
// metadata names its JWKS, and it signs tokens with its key.
type issuer struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	is := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// token signs claims with key (the issuer's, or another).
func (is *issuer) token(t *testing.T, key *ecdsa.PrivateKey, aud string, exp time.Time) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	require.NoError(t, err)
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: is.srv.URL, Audience: jwt.Audience{aud}, Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(time.Now())}).Serialize()
	require.NoError(t, err)
	return tok
}

// Without a token, with the wrong audience, expired, or signed by another
// key: 401 naming the protected resource metadata, which is served. A good
// token passes, and the backend never sees it.
func TestRequireBearer(t *testing.T) {
	is := newIssuer(t)
	var seen []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusNoContent)
	})
	h, err := gateway.RequireBearer(is.srv.URL, "mcp-gw", next)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	call := func(token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	for name, tok := range map[string]string{
		"none":           "",
		"wrong audience": is.token(t, is.key, "someone-else", time.Now().Add(time.Hour)),
		"expired":        is.token(t, is.key, "mcp-gw", time.Now().Add(-time.Hour)),
		"foreign key":    is.token(t, other, "mcp-gw", time.Now().Add(time.Hour)),
		"garbage":        "not.a.jwt",
	} {
		resp := call(tok)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		require.Contains(t, resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`, name)
	}
	require.Empty(t, seen)

	resp := call(is.token(t, is.key, "mcp-gw", time.Now().Add(time.Hour)))
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, []string{""}, seen, "the token is not forwarded")

	mresp, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	defer mresp.Body.Close()
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	require.NoError(t, json.NewDecoder(mresp.Body).Decode(&prm))
	require.Equal(t, srv.URL+"/mcp", prm.Resource)
	require.Equal(t, []string{is.srv.URL}, prm.AuthorizationServers)
}
