package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"golang.org/x/oauth2"
)

// identity picks the client to present to the authorization server md,
// in the order the MCP specification prefers: the pre-registered client
// (if it belongs to this server), a Client ID Metadata Document (if the
// server supports them and one is configured), a client registered
// earlier with this server, dynamic registration (RFC 7591). The
// registrations are kept per issuer: a client registered with one
// server is never shown to another.
func (t *Transport) identity(ctx context.Context, md *serverMetadata, prev *Token) (Client, error) {
	if pre := t.cfg.Client; pre.ID != "" {
		bound := pre.Issuer
		if bound == "" {
			t.mu.Lock()
			if t.preIssuer == "" {
				t.preIssuer = md.Issuer
			}
			bound = t.preIssuer
			t.mu.Unlock()
		}
		if bound == md.Issuer {
			pre.Issuer = md.Issuer
			return t.withAuthMethod(pre, md), nil
		}
		if t.cfg.ClientMetadataURL == "" && md.RegistrationEndpoint == "" {
			return Client{}, fmt.Errorf("the pre-registered client %s belongs to the authorization server %s, but the MCP server now names %s, which offers no other way to register: register a client with it", pre.ID, bound, md.Issuer)
		}
	}
	if t.cfg.ClientMetadataURL != "" && md.ClientIDMetadataDocumentSupported {
		return Client{ID: t.cfg.ClientMetadataURL, AuthMethod: "none", Issuer: md.Issuer}, nil
	}
	t.mu.Lock()
	c, ok := t.registered[md.Issuer]
	t.mu.Unlock()
	if ok {
		return c, nil
	}
	if prev != nil && prev.Client.ID != "" && prev.Client.Issuer == md.Issuer {
		return prev.Client, nil
	}
	if md.RegistrationEndpoint == "" {
		return Client{}, fmt.Errorf("the authorization server %s supports neither Client ID Metadata Documents nor dynamic client registration, and no client is pre-registered for it: configure a client id", md.Issuer)
	}
	c, err := t.register(ctx, md)
	if err != nil {
		return Client{}, err
	}
	t.mu.Lock()
	t.registered[md.Issuer] = c
	t.mu.Unlock()
	return c, nil
}

// withAuthMethod fills c.AuthMethod from the server's metadata when the
// registration did not say: client_secret_basic, then client_secret_post
// for a client with a secret, as the server supports them (RFC 8414: a
// server that lists none supports client_secret_basic), else none.
func (t *Transport) withAuthMethod(c Client, md *serverMetadata) Client {
	if c.AuthMethod != "" {
		return c
	}
	supported := md.TokenEndpointAuthMethodsSupported
	if len(supported) == 0 {
		supported = []string{"client_secret_basic"}
	}
	c.AuthMethod = "none"
	if c.Secret != "" {
		for _, m := range []string{"client_secret_basic", "client_secret_post"} {
			if slices.Contains(supported, m) {
				c.AuthMethod = m
				break
			}
		}
	}
	return c
}

// registrationRequest is the RFC 7591 client metadata snodo registers.
type registrationRequest struct {
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
}

type registrationResponse struct {
	ClientID                string `json:"client_id"`
	ClientSecret            string `json:"client_secret"`
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
}

// register registers a public client with md's registration endpoint.
// A redirect to a loopback host makes it a "native" application (OpenID
// Connect Registration), any other a "web" one.
func (t *Transport) register(ctx context.Context, md *serverMetadata) (Client, error) {
	appType := "web"
	if u, err := url.Parse(t.cfg.RedirectURL); err == nil && (isLoopback(u.Hostname()) || (u.Scheme != "http" && u.Scheme != "https")) {
		appType = "native"
	}
	body, err := json.Marshal(registrationRequest{
		ClientName:              t.cfg.ClientName,
		RedirectURIs:            []string{t.cfg.RedirectURL},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
		ApplicationType:         appType,
	})
	if err != nil {
		return Client{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return Client{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := t.as.Do(req)
	if err != nil {
		return Client{}, fmt.Errorf("registering a client with %s: %w", md.RegistrationEndpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return Client{}, fmt.Errorf("registering a client with %s: %w", md.RegistrationEndpoint, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return Client{}, fmt.Errorf("registering a client with %s: HTTP %d%s", md.RegistrationEndpoint, resp.StatusCode, oauthErrorOf(raw))
	}
	var r registrationResponse
	if err := json.Unmarshal(raw, &r); err != nil || r.ClientID == "" {
		return Client{}, fmt.Errorf("registering a client with %s: the answer has no client_id", md.RegistrationEndpoint)
	}
	switch r.TokenEndpointAuthMethod {
	case "", "none", "client_secret_basic", "client_secret_post":
	default:
		return Client{}, fmt.Errorf("registering a client with %s: it assigned token endpoint authentication %s, which snodo does not support", md.RegistrationEndpoint, quoted(r.TokenEndpointAuthMethod))
	}
	c := Client{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.TokenEndpointAuthMethod, Issuer: md.Issuer}
	return t.withAuthMethod(c, md), nil
}

// authStyle is how x/oauth2 sends c's credentials.
func (c Client) authStyle() oauth2.AuthStyle {
	if c.AuthMethod == "client_secret_basic" {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// secretFor is the secret to send: none for a public client.
func (c Client) secretFor() string {
	if c.AuthMethod == "none" {
		return ""
	}
	return c.Secret
}

// oauthErrorOf quotes the error and error_description of an OAuth error
// answer (RFC 6749 section 5.2), made printable, or nothing.
func oauthErrorOf(raw []byte) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Error == "" {
		return ""
	}
	return describeOAuthError(e.Error, e.Description)
}

var errNoCode = errors.New("the authorization response carries no code")
