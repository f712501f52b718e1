package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/snodo/snodo/internal/safetext"
)

// maxMetadataBytes bounds every metadata document and registration
// answer read from a server.
const maxMetadataBytes = 1 << 20

// resourceMetadata is the part of an RFC 9728 protected resource metadata
// document snodo uses.
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is the part of RFC 8414 (or OpenID Connect Discovery)
// authorization server metadata snodo uses.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	DPoPSigningAlgValuesSupported     []string `json:"dpop_signing_alg_values_supported"`

	// legacy: no metadata document was found and the endpoints are the
	// 2025-03-26 defaults at the server's origin.
	legacy bool
}

// discovery is where authorizing a server leads: the resource to name in
// every request, the scopes its metadata suggests, and its
// authorization server.
type discovery struct {
	resource string
	scopes   []string // the resource's scopes_supported
	as       *serverMetadata
}

// discover finds the authorization server of the MCP server at
// serverURL (canonical) from a 401's challenge: the protected resource
// metadata named by the challenge or at the well-known URLs (RFC 9728),
// then the first authorization server's metadata (RFC 8414, OpenID
// Connect Discovery). A server without protected resource metadata is
// treated as a 2025-03-26 server: its origin is its authorization server.
func discover(ctx context.Context, hc *http.Client, serverURL string, ch challenge) (*discovery, error) {
	prm, err := fetchResourceMetadata(ctx, hc, serverURL, ch.resourceMetadata)
	if err != nil {
		return nil, err
	}
	if prm == nil {
		// 2025-03-26: no protected resource metadata; the MCP server's
		// origin is the authorization server's issuer.
		u, _ := url.Parse(serverURL)
		origin := u.Scheme + "://" + u.Host
		md, err := fetchServerMetadata(ctx, hc, origin, true)
		if err != nil {
			return nil, err
		}
		return &discovery{resource: serverURL, as: md}, nil
	}
	issuer := prm.AuthorizationServers[0]
	md, err := fetchServerMetadata(ctx, hc, issuer, false)
	if err != nil {
		return nil, err
	}
	return &discovery{resource: prm.Resource, scopes: prm.ScopesSupported, as: md}, nil
}

// fetchResourceMetadata returns the protected resource metadata of
// serverURL, or nil when the server publishes none at the well-known
// URLs. A URL named by the challenge must answer.
func fetchResourceMetadata(ctx context.Context, hc *http.Client, serverURL, named string) (*resourceMetadata, error) {
	var candidates []string
	if named != "" {
		if err := checkEndpoint("resource_metadata in WWW-Authenticate", named); err != nil {
			return nil, err
		}
		candidates = []string{named}
	} else {
		u, _ := url.Parse(serverURL)
		origin := u.Scheme + "://" + u.Host
		if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
			candidates = append(candidates, origin+"/.well-known/oauth-protected-resource"+p)
		}
		candidates = append(candidates, origin+"/.well-known/oauth-protected-resource")
	}
	for _, c := range candidates {
		var prm resourceMetadata
		found, err := getJSON(ctx, hc, c, &prm)
		if err != nil {
			return nil, fmt.Errorf("protected resource metadata %s: %w", quoted(c), err)
		}
		if !found {
			if named != "" {
				return nil, fmt.Errorf("protected resource metadata %s named by the server's WWW-Authenticate was not found", quoted(c))
			}
			continue
		}
		if err := prm.validate(serverURL); err != nil {
			return nil, fmt.Errorf("protected resource metadata %s: %w", quoted(c), err)
		}
		return &prm, nil
	}
	return nil, nil
}

// validate checks a protected resource metadata document for serverURL:
// its resource must be the server or a prefix of it on the same origin
// (RFC 9728 section 3.3, RFC 8707), and it must name an authorization
// server by an absolute HTTPS (or loopback) URL.
func (p *resourceMetadata) validate(serverURL string) error {
	if p.Resource == "" {
		return errors.New(`the "resource" field is missing`)
	}
	if !resourceCovers(p.Resource, serverURL) {
		return fmt.Errorf("its resource %s is not the MCP server %s: refusing to authorize for another resource", quoted(p.Resource), serverURL)
	}
	if len(p.AuthorizationServers) == 0 {
		return errors.New(`"authorization_servers" is missing or empty`)
	}
	return checkEndpoint("authorization server", p.AuthorizationServers[0])
}

// resourceCovers reports whether resource identifies serverURL: the same
// scheme, host and port (case-insensitively), and a path that is the
// server's path or a parent of it.
func resourceCovers(resource, serverURL string) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" || r.RawQuery != "" {
		return false
	}
	s, err := url.Parse(serverURL)
	if err != nil {
		return false
	}
	if !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(r.Host, s.Host) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(s.EscapedPath(), "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

// metadataURLs lists where the metadata of issuer may be, in the order
// the MCP specification gives: RFC 8414 with the path inserted, then
// OpenID Connect Discovery inserted and appended (for an issuer with a
// path); RFC 8414 then OpenID Connect Discovery (without one).
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}
}

// fetchServerMetadata fetches and validates the metadata of issuer. A
// document whose issuer is not exactly issuer is refused (RFC 8414
// section 3.3). With legacy (a 2025-03-26 server), no document at all
// means the default endpoints at issuer: /authorize, /token, /register.
func fetchServerMetadata(ctx context.Context, hc *http.Client, issuer string, legacy bool) (*serverMetadata, error) {
	if err := checkEndpoint("authorization server", issuer); err != nil {
		return nil, err
	}
	var refused error
	for _, c := range metadataURLs(issuer) {
		var md serverMetadata
		found, err := getJSON(ctx, hc, c, &md)
		if err != nil {
			return nil, fmt.Errorf("authorization server metadata %s: %w", c, err)
		}
		if !found {
			continue
		}
		if md.Issuer != issuer {
			// Never use it; a later candidate may still be right.
			refused = fmt.Errorf("authorization server metadata %s names issuer %s, not %s: refusing to use it (RFC 8414 section 3.3)", c, quoted(md.Issuer), quoted(issuer))
			continue
		}
		if err := md.validate(); err != nil {
			return nil, fmt.Errorf("authorization server metadata %s: %w", c, err)
		}
		return &md, nil
	}
	if refused != nil {
		return nil, refused
	}
	if legacy {
		return &serverMetadata{
			Issuer:                issuer,
			AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint:         issuer + "/token",
			RegistrationEndpoint:  issuer + "/register",
			legacy:                true,
		}, nil
	}
	return nil, fmt.Errorf("authorization server %s publishes no metadata at %s", issuer, strings.Join(metadataURLs(issuer), " or "))
}

// validate checks that every endpoint is an absolute HTTPS or loopback
// URL.
func (m *serverMetadata) validate() error {
	if m.TokenEndpoint == "" {
		return errors.New(`"token_endpoint" is missing`)
	}
	for name, v := range map[string]string{
		"authorization_endpoint": m.AuthorizationEndpoint,
		"token_endpoint":         m.TokenEndpoint,
		"registration_endpoint":  m.RegistrationEndpoint,
	} {
		if v == "" {
			continue
		}
		if err := checkEndpoint(name, v); err != nil {
			return err
		}
	}
	return nil
}

// supportsPKCE reports whether the server said it supports S256. A
// 2025-03-26 server without metadata is assumed to.
func (m *serverMetadata) supportsPKCE() bool {
	if m.legacy {
		return true
	}
	for _, v := range m.CodeChallengeMethodsSupported {
		if v == "S256" {
			return true
		}
	}
	return false
}

// checkEndpoint refuses a URL that is not absolute HTTPS, or HTTP to a
// loopback host (RFC 8252 section 8.3): tokens, codes and secrets never
// travel in clear text to another machine.
func checkEndpoint(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s %s is not an absolute URL", what, quoted(raw))
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%s %s is plain HTTP to a host that is not loopback: use HTTPS", what, safetext.Line(raw))
	}
	return fmt.Errorf("%s %s is neither HTTPS nor loopback HTTP", what, quoted(raw))
}

func isLoopback(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return strings.HasPrefix(host, "127.")
}

// getJSON GETs u and decodes a JSON object into v. It returns found=false
// for 404 and the other 4xx answers that say "not here"; any other
// failure is an error naming the status or what was malformed.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return false, fmt.Errorf("reading it: %w", err)
	}
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	case len(body) > maxMetadataBytes:
		return false, fmt.Errorf("is larger than %d bytes", maxMetadataBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, fmt.Errorf("is not a JSON object of the expected shape: %w", err)
	}
	return true, nil
}
