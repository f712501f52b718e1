package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/snodo/snodo/internal/safetext"
)

// Grant type and token type identifiers.
const (
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	assertionTypeJWT   = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// authorize runs discovery from the challenge and then the configured
// grant. more are scopes a 403 asked for: they are added to the scopes
// requested before (a step-up keeps what was granted).
func (t *Transport) authorize(ctx context.Context, ch challenge, prev *Token, more []string) (*Token, error) {
	d, err := discover(ctx, t.as, t.resource, ch)
	if err != nil {
		return nil, fmt.Errorf("oauth: discovering how to authorize with %s: %w", t.resource, err)
	}
	scopes := t.selectScopes(ch, d, more)
	log := t.cfg.Logger.With("server", t.resource, "issuer", d.as.Issuer)
	var tok *oauth2.Token
	var client Client
	switch {
	case t.cfg.ClientCredentials != nil:
		log.DebugContext(ctx, "oauth: client credentials grant")
		client, tok, err = t.clientCredentials(ctx, d, scopes)
	case t.cfg.JWTBearer != nil:
		log.DebugContext(ctx, "oauth: JWT-bearer grant")
		client, tok, err = t.jwtBearer(ctx, d, scopes)
	case t.cfg.Enterprise != nil:
		log.DebugContext(ctx, "oauth: enterprise-managed authorization")
		client, tok, err = t.enterprise(ctx, d, scopes)
	default:
		log.DebugContext(ctx, "oauth: authorization code flow", "scopes", safetext.Line(strings.Join(scopes, " ")))
		client, tok, err = t.authorizationCode(ctx, d, scopes, prev)
	}
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.scopes = scopes
	t.mu.Unlock()
	return t.record(tok, d.as.Issuer, client, scopes), nil
}

// selectScopes: the challenge's scope, else the resource's
// scopes_supported, else none (the scope parameter is then omitted); a
// step-up adds the new scopes to those requested before; the configured
// scopes are always added, and offline_access when the authorization
// server lists it and a user authorizes (for a refresh token).
func (t *Transport) selectScopes(ch challenge, d *discovery, more []string) []string {
	var s []string
	switch {
	case more != nil:
		t.mu.Lock()
		s = append(s, t.scopes...)
		t.mu.Unlock()
		s = append(s, more...)
	case len(ch.scope) > 0:
		s = append(s, ch.scope...)
	default:
		s = append(s, d.scopes...)
	}
	s = append(s, t.cfg.Scopes...)
	interactive := t.cfg.ClientCredentials == nil && t.cfg.JWTBearer == nil && t.cfg.Enterprise == nil
	if interactive && slices.Contains(d.as.ScopesSupported, "offline_access") {
		s = append(s, "offline_access")
	}
	var out []string
	for _, v := range s {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// record turns x/oauth2's token into a Token for the store.
func (t *Transport) record(tok *oauth2.Token, issuer string, c Client, requested []string) *Token {
	typ := tok.Type()
	if strings.EqualFold(typ, "dpop") {
		typ = "DPoP"
	}
	scopes := requested
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		scopes = strings.Fields(s)
	}
	return &Token{
		AccessToken:  tok.AccessToken,
		TokenType:    typ,
		RefreshToken: tok.RefreshToken,
		Expiry:       tok.Expiry,
		Issued:       time.Now(),
		Scopes:       scopes,
		Issuer:       issuer,
		Client:       c,
	}
}

// oauth2Config is x/oauth2's view of client c at the server d.
func (t *Transport) oauth2Config(d *discovery, c Client, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     c.ID,
		ClientSecret: c.secretFor(),
		Endpoint: oauth2.Endpoint{
			AuthURL:   d.as.AuthorizationEndpoint,
			TokenURL:  d.as.TokenEndpoint,
			AuthStyle: c.authStyle(),
		},
		RedirectURL: t.cfg.RedirectURL,
		Scopes:      scopes,
	}
}

// tokenCtx carries the authorization server client to x/oauth2, with the
// resource every token request must name (RFC 8707).
func (t *Transport) tokenCtx(ctx context.Context, resource string) context.Context {
	return context.WithValue(withResource(ctx, resource), oauth2.HTTPClient, t.as)
}

// authorizationCode runs the authorization code flow with PKCE (S256):
// the user authorizes at the authorization endpoint through
// cfg.Authorize; the response's iss is checked (RFC 9207) and its state
// compared before the code goes to the token endpoint.
func (t *Transport) authorizationCode(ctx context.Context, d *discovery, scopes []string, prev *Token) (Client, *oauth2.Token, error) {
	md := d.as
	if !md.supportsPKCE() {
		return Client{}, nil, fmt.Errorf("oauth: the authorization server %s does not list S256 in code_challenge_methods_supported: refusing to authorize without PKCE", md.Issuer)
	}
	if md.AuthorizationEndpoint == "" {
		return Client{}, nil, fmt.Errorf("oauth: the authorization server %s has no authorization_endpoint", md.Issuer)
	}
	client, err := t.identity(ctx, md, prev)
	if err != nil {
		return Client{}, nil, fmt.Errorf("oauth: %w", err)
	}
	cfg := t.oauth2Config(d, client, scopes)
	verifier := oauth2.GenerateVerifier()
	state := randomString()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	q, err := t.cfg.Authorize(ctx, authURL)
	if err != nil {
		return Client{}, nil, fmt.Errorf("oauth: the authorization step failed: %w", err)
	}
	if err := checkResponse(q, md, state); err != nil {
		return Client{}, nil, fmt.Errorf("oauth: %w", err)
	}
	tok, err := cfg.Exchange(t.tokenCtx(ctx, d.resource), q.Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	if err != nil {
		return Client{}, nil, tokenError(md.TokenEndpoint, "authorization_code", err)
	}
	return client, tok, nil
}

// checkResponse validates an authorization response: iss first (RFC 9207
// section 2.4, compared as plain strings, and required when the server
// advertises it), so that nothing of a mixed-up response is acted on;
// then error, state and code.
func checkResponse(q url.Values, md *serverMetadata, state string) error {
	iss, has := q["iss"]
	switch {
	case has && (len(iss) != 1 || iss[0] != md.Issuer):
		return fmt.Errorf("the authorization response comes from issuer %s, not %s: refusing it (RFC 9207)", quoted(strings.Join(iss, ",")), quoted(md.Issuer))
	case !has && md.IssParameterSupported:
		return fmt.Errorf("the authorization response lacks the iss parameter that %s advertises: refusing it (RFC 9207)", md.Issuer)
	}
	if e := q.Get("error"); e != "" {
		return fmt.Errorf("the authorization server refused:%s", describeOAuthError(e, q.Get("error_description")))
	}
	if q.Get("state") != state {
		return errors.New("the authorization response's state does not match the request's: refusing it")
	}
	if q.Get("code") == "" {
		return errNoCode
	}
	return nil
}

// refresh uses prev's refresh token with the server that issued it,
// after checking by discovery that the server still names that issuer
// (a server that moved to another authorization server gets a full
// authorization with a new registration instead).
func (t *Transport) refresh(ctx context.Context, ch challenge, prev *Token) (*Token, error) {
	d, err := discover(ctx, t.as, t.resource, ch)
	if err != nil {
		return nil, err
	}
	if d.as.Issuer != prev.Issuer {
		return nil, fmt.Errorf("the MCP server now names the authorization server %s, not %s", d.as.Issuer, prev.Issuer)
	}
	cfg := t.oauth2Config(d, prev.Client, prev.Scopes)
	old := &oauth2.Token{RefreshToken: prev.RefreshToken, Expiry: time.Unix(1, 0)}
	tok, err := cfg.TokenSource(t.tokenCtx(ctx, d.resource), old).Token()
	if err != nil {
		return nil, tokenError(d.as.TokenEndpoint, "refresh_token", err)
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = prev.RefreshToken
	}
	return t.record(tok, d.as.Issuer, prev.Client, prev.Scopes), nil
}

// clientCredentials runs the client_credentials grant, authenticating
// with the secret (basic or post as the server allows) or with a signed
// client assertion (private_key_jwt, RFC 7523 section 2.2).
func (t *Transport) clientCredentials(ctx context.Context, d *discovery, scopes []string) (Client, *oauth2.Token, error) {
	c := t.cfg.Client
	c.Issuer = d.as.Issuer
	params := url.Values{"resource": {d.resource}}
	if cc := t.cfg.ClientCredentials; cc.PrivateKey != nil {
		a, err := clientAssertion(cc.PrivateKey, cc.Algorithm, c.ID, d.as.Issuer)
		if err != nil {
			return Client{}, nil, err
		}
		params.Set("client_assertion_type", assertionTypeJWT)
		params.Set("client_assertion", a)
		c.Secret, c.AuthMethod = "", "none"
	} else {
		c = t.withAuthMethod(c, d.as)
	}
	tok, err := t.grant(ctx, d, d.as.TokenEndpoint, c, scopes, params)
	if err != nil {
		return Client{}, nil, tokenError(d.as.TokenEndpoint, "client_credentials", err)
	}
	return c, tok, nil
}

// jwtBearer runs the JWT-bearer grant with the configured assertion.
// A refusal is returned as is: no retry, no other grant.
func (t *Transport) jwtBearer(ctx context.Context, d *discovery, scopes []string) (Client, *oauth2.Token, error) {
	a, err := t.cfg.JWTBearer(ctx)
	if err != nil {
		return Client{}, nil, fmt.Errorf("oauth: getting the JWT-bearer assertion: %w", err)
	}
	c := t.cfg.Client
	c.Issuer = d.as.Issuer
	c = t.withAuthMethod(c, d.as)
	params := url.Values{"grant_type": {grantJWTBearer}, "assertion": {a}, "resource": {d.resource}}
	tok, err := t.grant(ctx, d, d.as.TokenEndpoint, c, scopes, params)
	if err != nil {
		return Client{}, nil, tokenError(d.as.TokenEndpoint, "JWT-bearer", err)
	}
	return c, tok, nil
}

// enterprise exchanges the user's ID token at the IdP for an ID-JAG
// (RFC 8693 token exchange) naming the MCP authorization server and
// resource, then the ID-JAG for an access token (JWT-bearer grant).
func (t *Transport) enterprise(ctx context.Context, d *discovery, scopes []string) (Client, *oauth2.Token, error) {
	e := t.cfg.Enterprise
	idToken, err := e.IDToken(ctx)
	if err != nil {
		return Client{}, nil, fmt.Errorf("oauth: getting the ID token: %w", err)
	}
	idp := e.IdPClient
	if idp.AuthMethod == "" {
		idp.AuthMethod = "client_secret_post"
		if idp.Secret == "" {
			idp.AuthMethod = "none"
		}
	}
	exchange := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {idToken},
		"subject_token_type":   {tokenTypeIDToken},
		"requested_token_type": {tokenTypeIDJAG},
		"audience":             {d.as.Issuer},
		"resource":             {d.resource},
	}
	jag, err := t.grant(ctx, d, e.IdPTokenEndpoint, idp, scopes, exchange)
	if err != nil {
		return Client{}, nil, tokenError(e.IdPTokenEndpoint, "token exchange", err)
	}
	c := t.cfg.Client
	c.Issuer = d.as.Issuer
	c = t.withAuthMethod(c, d.as)
	params := url.Values{"grant_type": {grantJWTBearer}, "assertion": {jag.AccessToken}, "resource": {d.resource}}
	tok, err := t.grant(ctx, d, d.as.TokenEndpoint, c, scopes, params)
	if err != nil {
		return Client{}, nil, tokenError(d.as.TokenEndpoint, "JWT-bearer (ID-JAG)", err)
	}
	return c, tok, nil
}

// grant posts one token request without a user: x/oauth2's client
// credentials request, whose grant_type params may replace.
func (t *Transport) grant(ctx context.Context, d *discovery, endpoint string, c Client, scopes []string, params url.Values) (*oauth2.Token, error) {
	cfg := &clientcredentials.Config{
		ClientID:       c.ID,
		ClientSecret:   c.secretFor(),
		TokenURL:       endpoint,
		Scopes:         scopes,
		EndpointParams: params,
		AuthStyle:      c.authStyle(),
	}
	return cfg.Token(t.tokenCtx(ctx, d.resource))
}

// tokenError describes a failed token request by the endpoint, the grant
// and the server's error code and description, never by the request's
// content: x/oauth2's own message quotes the whole answer.
func tokenError(endpoint, grant string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := ""
		if re.Response != nil {
			status = fmt.Sprintf(" (HTTP %d)", re.Response.StatusCode)
		}
		if re.ErrorCode == "" {
			return fmt.Errorf("oauth: the token endpoint %s refused the %s grant%s", endpoint, grant, status)
		}
		return fmt.Errorf("oauth: the token endpoint %s refused the %s grant%s:%s", endpoint, grant, status, describeOAuthError(re.ErrorCode, re.ErrorDescription))
	}
	return fmt.Errorf("oauth: the %s grant at %s failed: %w", grant, endpoint, err)
}

// randomString is 32 random bytes, base64url: a state or a jti.
func randomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
