// Package oauthserver is a real OAuth authorization server and a
// protected resource on loopback, for tests of snodo's authorization:
// metadata, dynamic registration, an authorization endpoint that
// redirects at once (the user always consents), a token endpoint for the
// authorization code (PKCE checked), refresh, client credentials and
// JWT-bearer grants, DPoP nonces, and knobs for every misbehaviour the
// client must refuse. Set the knobs in the setup function; read the
// recorded requests once the requests under test are done.
package oauthserver

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// AS is a real authorization server on loopback: metadata,
// dynamic registration, an authorization endpoint that redirects at once
// (the user always consents), and a token endpoint for the authorization
// code, refresh, client credentials and JWT-bearer grants. It checks PKCE
// and records every request. Its knobs are set before the test starts.
type AS struct {
	srv *httptest.Server

	// Knobs.
	Issuer          string // metadata's issuer; default the server's URL
	IssMode         string // "" correct, "omit", "wrong", "slash"
	IssSupported    bool
	NoPKCE          bool
	NoRegistration  bool
	AuthMethods     []string
	ScopesSupported []string
	Refresh         bool
	ExpiresIn       int
	TokenError      string // every token request fails with this error code
	// TokenErrorDescription is the error_description of those failures
	// (default "the test says no").
	TokenErrorDescription string
	GrantScopes           []string
	ClientSecret          string // registrations get this secret
	AssertionKey          crypto.PublicKey
	DPoPNonce             string
	Malformed             bool // metadata is not JSON

	mu           sync.Mutex
	AuthRequests []url.Values
	TokenForms   []url.Values
	TokenHeaders []http.Header
	registered   int
	challenges   map[string]string // code -> code_challenge
	codeScopes   map[string]string
	tokens       map[string][]string // access token -> scopes
	refreshes    map[string][]string
	seq          int
}

// NewAS starts an authorization server, set up by setup (may be nil),
// and stops it when the test ends.
func NewAS(t testing.TB, setup func(*AS)) *AS {
	a := &AS{challenges: map[string]string{}, codeScopes: map[string]string{}, tokens: map[string][]string{}, refreshes: map[string][]string{}}
	if setup != nil {
		setup(a)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	a.srv = httptest.NewUnstartedServer(mux) // set before any handler reads it
	a.srv.Start()
	t.Cleanup(a.srv.Close)
	return a
}

// URL is the issuer.
func (a *AS) URL() string { return a.srv.URL }

func (a *AS) metadata(w http.ResponseWriter, r *http.Request) {
	if a.Malformed {
		w.Write([]byte("{not json"))
		return
	}
	iss := a.Issuer
	if iss == "" {
		iss = a.srv.URL
	}
	md := map[string]any{
		"issuer":                   iss,
		"authorization_endpoint":   a.srv.URL + "/authorize",
		"token_endpoint":           a.srv.URL + "/token",
		"response_types_supported": []string{"code"},
		"authorization_response_iss_parameter_supported": a.IssSupported,
	}
	if !a.NoPKCE {
		md["code_challenge_methods_supported"] = []string{"S256"}
	}
	if !a.NoRegistration {
		md["registration_endpoint"] = a.srv.URL + "/register"
	}
	if a.AuthMethods != nil {
		md["token_endpoint_auth_methods_supported"] = a.AuthMethods
	}
	if a.ScopesSupported != nil {
		md["scopes_supported"] = a.ScopesSupported
	}
	if a.DPoPNonce != "" {
		md["dpop_signing_alg_values_supported"] = []string{"ES256"}
	}
	json.NewEncoder(w).Encode(md)
}

func (a *AS) register(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	a.mu.Lock()
	a.registered++
	id := fmt.Sprintf("client-%d", a.registered)
	a.mu.Unlock()
	resp := map[string]any{"client_id": id}
	if a.ClientSecret != "" {
		resp["client_secret"] = a.ClientSecret
	}
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(resp)
}

func (a *AS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	a.AuthRequests = append(a.AuthRequests, q)
	a.seq++
	code := fmt.Sprintf("code-%d", a.seq)
	a.challenges[code] = q.Get("code_challenge")
	a.codeScopes[code] = q.Get("scope")
	a.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := url.Values{"code": {code}, "state": {q.Get("state")}}
	switch a.IssMode {
	case "":
		v.Set("iss", a.srv.URL)
	case "wrong":
		v.Set("iss", "https://evil.example.com")
	case "slash":
		v.Set("iss", a.srv.URL+"/")
	}
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (a *AS) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	a.mu.Lock()
	a.TokenForms = append(a.TokenForms, r.PostForm)
	a.TokenHeaders = append(a.TokenHeaders, r.Header.Clone())
	a.mu.Unlock()
	fail := func(code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if a.TokenError != "" {
		desc := a.TokenErrorDescription
		if desc == "" {
			desc = "the test says no"
		}
		fail(a.TokenError, desc)
		return
	}
	if a.DPoPNonce != "" {
		if p := r.Header.Get("DPoP"); p == "" || DPoPClaim(p, "nonce") != a.DPoPNonce {
			w.Header().Set("DPoP-Nonce", a.DPoPNonce)
			fail("use_dpop_nonce", "nonce needed")
			return
		}
	}
	var scopes []string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		a.mu.Lock()
		ch, ok := a.challenges[code]
		delete(a.challenges, code)
		scopes = strings.Fields(a.codeScopes[code])
		a.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || ch != base64.RawURLEncoding.EncodeToString(sum[:]) {
			fail("invalid_grant", "unknown code or PKCE mismatch")
			return
		}
	case "refresh_token":
		a.mu.Lock()
		s, ok := a.refreshes[r.PostForm.Get("refresh_token")]
		a.mu.Unlock()
		if !ok {
			fail("invalid_grant", "unknown refresh token")
			return
		}
		scopes = s
	case "client_credentials":
		if a.AssertionKey != nil {
			if err := a.checkAssertion(r.PostForm.Get("client_assertion")); err != nil {
				fail("invalid_client", err.Error())
				return
			}
		} else if id, secret, ok := r.BasicAuth(); !ok || id != "svc" || secret != "svc-secret" {
			fail("invalid_client", "bad client credentials")
			return
		}
		scopes = strings.Fields(r.PostForm.Get("scope"))
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if r.PostForm.Get("assertion") != "workload-jwt" {
			fail("invalid_grant", "bad assertion")
			return
		}
	default:
		fail("unsupported_grant_type", r.PostForm.Get("grant_type"))
		return
	}
	if a.GrantScopes != nil {
		scopes = a.GrantScopes
	}
	a.mu.Lock()
	a.seq++
	access := fmt.Sprintf("access-%d-SECRETTOKEN", a.seq)
	a.tokens[access] = scopes
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "scope": strings.Join(scopes, " ")}
	if a.DPoPNonce != "" {
		resp["token_type"] = "DPoP"
	}
	if a.Refresh {
		rt := fmt.Sprintf("refresh-%d-SECRETREFRESH", a.seq)
		a.refreshes[rt] = scopes
		resp["refresh_token"] = rt
	}
	if a.ExpiresIn != 0 {
		resp["expires_in"] = a.ExpiresIn
	}
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// checkAssertion verifies a private_key_jwt assertion: signature,
// iss = sub = "svc", aud = the issuer.
func (a *AS) checkAssertion(s string) error {
	jws, err := jose.ParseSigned(s, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return err
	}
	payload, err := jws.Verify(a.AssertionKey)
	if err != nil {
		return err
	}
	var c map[string]any
	json.Unmarshal(payload, &c)
	if c["iss"] != "svc" || c["sub"] != "svc" || c["aud"] != a.srv.URL {
		return fmt.Errorf("bad claims %v", c)
	}
	return nil
}

// Revoke forgets every access token, so the next request meets a 401.
func (a *AS) Revoke() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.tokens)
}

// RevokeRefresh forgets every refresh token, so the next refresh fails
// with invalid_grant.
func (a *AS) RevokeRefresh() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.refreshes)
}

// GrantTypes lists the grant_type of every token request so far.
func (a *AS) GrantTypes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var g []string
	for _, f := range a.TokenForms {
		g = append(g, f.Get("grant_type"))
	}
	return g
}

// ScopesOf says whether the server issued token and with which scopes.
func (a *AS) ScopesOf(token string) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.tokens[token]
	return s, ok
}

// Counts returns how many authorization, token and registration
// requests the server has had.
func (a *AS) Counts() (auths, tokens, registrations int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.AuthRequests), len(a.TokenForms), a.registered
}

// DPoPClaim reads one claim of a DPoP proof without verifying it (the
// resource server below verifies).
func DPoPClaim(proof, claim string) string {
	jws, err := jose.ParseSigned(proof, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return ""
	}
	var c map[string]any
	json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c)
	s, _ := c[claim].(string)
	return s
}

// Resource is a protected resource on loopback: /mcp answers "ok" to a
// request whose token the authorization server issued with the scopes
// the request needs (?need=a+b), 401 without one, 403
// insufficient_scope with too few scopes. It publishes its protected
// resource metadata at the path-based well-known URL.
type Resource struct {
	srv *httptest.Server
	as  *AS

	PRMResource  string // default the server's /mcp URL
	PRMMalformed bool
	Scopes       []string // scopes_supported
	Challenge    string   // scope in the 401's challenge
	DPoP         bool
	Handler      http.Handler // serves authorized requests to /mcp (an MCP server); nil: "ok"
	// RejectAll answers every request 401, with a fresh token too.
	RejectAll bool
	// ResourceMetadata, when set, is the challenge's resource_metadata
	// instead of the server's own (written as given: quotes, escapes).
	ResourceMetadata string

	mu      sync.Mutex
	Headers []http.Header // every /mcp request's headers; read them with RequestHeaders
}

// NewResource starts a protected resource whose authorization server is
// as, set up by setup (may be nil), and stops it when the test ends.
func NewResource(t testing.TB, as *AS, setup func(*Resource)) *Resource {
	s := &Resource{as: as}
	if setup != nil {
		setup(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.prm)
	mux.HandleFunc("/mcp", s.mcp)
	s.srv = httptest.NewUnstartedServer(mux) // set before any handler reads it
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

// RequestHeaders returns the headers of every request to /mcp so far.
func (s *Resource) RequestHeaders() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.Headers...)
}

// URL is the MCP endpoint, the protected resource.
func (s *Resource) URL() string { return s.srv.URL + "/mcp" }

func (s *Resource) prm(w http.ResponseWriter, r *http.Request) {
	if s.PRMMalformed {
		w.Write([]byte(`{"resource": 42}`))
		return
	}
	res := s.PRMResource
	if res == "" {
		res = s.URL()
	}
	doc := map[string]any{"resource": res, "authorization_servers": []string{s.as.URL()}}
	if s.Scopes != nil {
		doc["scopes_supported"] = s.Scopes
	}
	json.NewEncoder(w).Encode(doc)
}

func (s *Resource) mcp(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.Headers = append(s.Headers, r.Header.Clone())
	s.mu.Unlock()
	scheme := "Bearer"
	if s.DPoP {
		scheme = "DPoP"
	}
	prm := s.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	if s.ResourceMetadata != "" {
		prm = s.ResourceMetadata
	}
	header := scheme + ` resource_metadata="` + prm + `"`
	if s.Challenge != "" {
		header += `, scope="` + s.Challenge + `"`
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), scheme+" ")
	scopes, known := s.as.ScopesOf(tok)
	if !ok || !known || s.RejectAll {
		w.Header().Set("WWW-Authenticate", header)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if s.DPoP {
		if err := checkProof(r, tok, s.as.DPoPNonce); err != nil {
			w.Header().Set("WWW-Authenticate", scheme+` error="use_dpop_nonce"`)
			w.Header().Set("DPoP-Nonce", s.as.DPoPNonce)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
	}
	need := strings.Fields(r.URL.Query().Get("need"))
	for _, n := range need {
		if !slices.Contains(scopes, n) {
			w.Header().Set("WWW-Authenticate", scheme+` error="insufficient_scope", scope="`+strings.Join(need, " ")+`"`)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
	}
	if s.Handler != nil {
		s.Handler.ServeHTTP(w, r)
		return
	}
	w.Write([]byte("ok"))
}

// checkProof verifies a DPoP proof on a resource request: signed by the
// embedded key, for this method and URL, bound to the token, with the
// nonce.
func checkProof(r *http.Request, token, nonce string) error {
	jws, err := jose.ParseSigned(r.Header.Get("DPoP"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return err
	}
	h := jws.Signatures[0].Protected
	if h.ExtraHeaders["typ"] != "dpop+jwt" || h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() {
		return fmt.Errorf("bad proof header")
	}
	payload, err := jws.Verify(h.JSONWebKey)
	if err != nil {
		return err
	}
	var c map[string]any
	json.Unmarshal(payload, &c)
	sum := sha256.Sum256([]byte(token))
	u := "http://" + r.Host + r.URL.Path
	if c["htm"] != r.Method || c["htu"] != u || c["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
		return fmt.Errorf("bad proof claims %v", c)
	}
	if iat, _ := c["iat"].(float64); time.Since(time.Unix(int64(iat), 0)) > time.Minute {
		return fmt.Errorf("stale proof")
	}
	if c["nonce"] != nonce {
		return fmt.Errorf("nonce needed")
	}
	return nil
}

// Consent is the user of an authorization server that consents at once
// (this one, or the conformance suite's): it opens authURL and returns
// the query of the redirect the server answers with, without following
// it, as an OAuth AuthorizeFunc does.
func Consent(ctx context.Context, authURL string) (url.Values, error) {
	c := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, fmt.Errorf("the authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("the authorization endpoint redirected to an unparsable URL: %w", err)
	}
	return u.Query(), nil
}
