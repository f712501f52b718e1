package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Authorization on the gateway (the MCP authorization spec's resource
// server role): every request needs a bearer JWT that the issuer signed
// (checked against its JWKS), naming the audience, unexpired. A request
// without a valid one gets 401 with a WWW-Authenticate header naming the
// protected resource metadata (RFC 9728), which the middleware serves at
// /.well-known/oauth-protected-resource, so that an MCP client can find
// the issuer and log in. The token is never logged and never forwarded:
// the gateway's backends are reached by snodo's own clients.

// auth checks bearer tokens in front of a handler (RequireBearer).
type auth struct {
	issuer, audience string
	next             http.Handler
	client           *http.Client

	mu      sync.Mutex
	keys    *jose.JSONWebKeySet
	fetched time.Time
}

// authAlgorithms are the JWS algorithms accepted.
var authAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA}

// RequireBearer wraps next so that only requests bearing a JWT from
// issuer (an https URL, or http on a loopback host) for audience reach
// it. The issuer's metadata and JWKS are fetched on first use and the
// keys again, at most once a minute, when a token names a key not known.
//
// The handler it returns serves the protected resource metadata, and
// checks the token of every other request (but GET /healthz) before
// passing it on without its Authorization header.
func RequireBearer(issuer, audience string, next http.Handler) (http.Handler, error) {
	if issuer == "" || audience == "" {
		return nil, errors.New("gateway.RequireBearer: give both the issuer and the audience")
	}
	return &auth{issuer: strings.TrimSuffix(issuer, "/"), audience: audience, next: next,
		client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// ServeHTTP serves the metadata, or checks the token.
func (a *auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
		a.metadata(w, r)
		return
	}
	if r.URL.Path == "/healthz" {
		a.next.ServeHTTP(w, r)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		a.challenge(w, r, "")
		return
	}
	if err := a.check(r.Context(), strings.TrimSpace(token)); err != nil {
		a.challenge(w, r, "invalid_token")
		return
	}
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	a.next.ServeHTTP(w, r)
}

// resourceOf is the URL of the MCP endpoint r addresses.
func resourceOf(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.URL.Path
	if p, ok := strings.CutPrefix(path, "/.well-known/oauth-protected-resource"); ok {
		path = p
	}
	return scheme + "://" + r.Host + path
}

func (a *auth) challenge(w http.ResponseWriter, r *http.Request, errCode string) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	meta := scheme + "://" + r.Host + "/.well-known/oauth-protected-resource" + r.URL.Path
	v := fmt.Sprintf(`Bearer resource_metadata=%q`, meta)
	if errCode != "" {
		v += fmt.Sprintf(`, error=%q`, errCode)
	}
	w.Header().Set("WWW-Authenticate", v)
	writeJSONError(w, http.StatusUnauthorized, nil, -32001, "Unauthorized: a bearer token from "+a.issuer+" is required", nil)
}

func (a *auth) metadata(w http.ResponseWriter, r *http.Request) {
	b, _ := json.Marshal(map[string]any{
		"resource":                 resourceOf(r),
		"authorization_servers":    []string{a.issuer},
		"bearer_methods_supported": []string{"header"},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// check verifies token: signature by one of the issuer's keys, issuer,
// audience, expiry.
func (a *auth) check(ctx context.Context, token string) error {
	tok, err := jwt.ParseSigned(token, authAlgorithms)
	if err != nil {
		return err
	}
	var kid string
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	keys, err := a.keysFor(ctx, kid)
	if err != nil {
		return err
	}
	var claims jwt.Claims
	verified := false
	for _, k := range keys {
		if tok.Claims(k.Key, &claims) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return errors.New("signature not by the issuer's keys")
	}
	return claims.ValidateWithLeeway(jwt.Expected{Issuer: a.issuer, AnyAudience: jwt.Audience{a.audience}, Time: time.Now()}, 30*time.Second)
}

// keysFor returns the issuer's keys with id kid (all, for none), fetching
// the set when it is not known yet or lacks kid (at most once a minute).
func (a *auth) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	find := func() []jose.JSONWebKey {
		if a.keys == nil {
			return nil
		}
		if kid == "" {
			return a.keys.Keys
		}
		return a.keys.Key(kid)
	}
	if ks := find(); len(ks) > 0 || time.Since(a.fetched) < time.Minute {
		if len(ks) == 0 {
			return nil, errors.New("no key of the issuer matches the token")
		}
		return ks, nil
	}
	set, err := a.fetchKeys(ctx)
	a.fetched = time.Now()
	if err != nil {
		return nil, err
	}
	a.keys = set
	if ks := find(); len(ks) > 0 {
		return ks, nil
	}
	return nil, errors.New("no key of the issuer matches the token")
}

func (a *auth) fetchKeys(ctx context.Context) (*jose.JSONWebKeySet, error) {
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	var err error
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if err = a.getJSON(ctx, a.issuer+p, &meta); err == nil && meta.JWKSURI != "" {
			break
		}
	}
	if meta.JWKSURI == "" {
		return nil, fmt.Errorf("the issuer's metadata names no jwks_uri: %v", err)
	}
	var set jose.JSONWebKeySet
	if err := a.getJSON(ctx, meta.JWKSURI, &set); err != nil {
		return nil, err
	}
	return &set, nil
}

func (a *auth) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
