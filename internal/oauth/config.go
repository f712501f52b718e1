package oauth

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// AuthorizeFunc is the interactive step of the authorization code flow:
// show authorizationURL to the user (a browser, a printed link), wait
// for the authorization server to redirect back, and return the query
// of that redirect (code, state, iss, or error). snodo never opens a
// browser itself. It checks state and iss before it uses the code.
type AuthorizeFunc func(ctx context.Context, authorizationURL string) (url.Values, error)

// AssertionFunc returns a signed JWT for a JWT-bearer grant (RFC 7523),
// such as a workload identity token the platform issued. It is called
// for each token request, so it may return a fresh one each time.
type AssertionFunc func(ctx context.Context) (string, error)

// Config says how to authorize with the protected MCP servers of one
// transport. With none of the extension fields set, snodo runs the
// authorization code flow with Authorize; each extension replaces that
// flow with a grant that needs no user.
type Config struct {
	// Client is a pre-registered client. Its Issuer binds it to one
	// authorization server (empty: the first one it is used with).
	Client Client
	// ClientMetadataURL is the HTTPS URL of this client's Client ID
	// Metadata Document, used as client id with servers that support it.
	ClientMetadataURL string
	// ClientName is the name registered dynamically. Default "snodo".
	ClientName string
	// RedirectURL receives the authorization response. Must be HTTPS or
	// loopback HTTP. Default "http://127.0.0.1/callback".
	RedirectURL string
	// Scopes are requested in addition to those the server asks for.
	Scopes []string
	// Authorize runs the interactive step. Required for the
	// authorization code flow.
	Authorize AuthorizeFunc
	// Store keeps tokens. Default: a MemoryStore.
	Store TokenStore
	// MaxStepUps bounds the re-authorizations with more scopes that one
	// request may trigger on 403 insufficient_scope. Default 2.
	MaxStepUps int
	// HTTPClient talks to authorization servers (metadata, registration,
	// tokens). Default: a client over the transport's base with a 30 s
	// timeout. Its redirects are not followed.
	HTTPClient *http.Client
	// Logger receives debug lines about each step, never a token or a
	// secret. Default: discard.
	Logger *slog.Logger

	// ClientCredentials: the client_credentials grant (the OAuth client
	// credentials extension) with Client's secret, or with a JWT
	// assertion signed by PrivateKey when it is set.
	ClientCredentials *ClientCredentials
	// JWTBearer: the JWT-bearer grant (RFC 7523) with the assertion it
	// returns, for workload identity federation.
	JWTBearer AssertionFunc
	// Enterprise: enterprise-managed authorization: the user's ID token
	// is exchanged at the enterprise IdP for an ID-JAG, which the MCP
	// authorization server exchanges for an access token.
	Enterprise *Enterprise
	// DPoP binds tokens to a key (RFC 9449) instead of bearer tokens.
	DPoP *DPoP
}

// ClientCredentials configures the client_credentials grant.
type ClientCredentials struct {
	// PrivateKey signs a client assertion (private_key_jwt) instead of
	// sending Client.Secret. Algorithm names its JWS algorithm
	// ("ES256", "RS256", …; default from the key).
	PrivateKey crypto.Signer
	Algorithm  string
}

// Enterprise configures enterprise-managed authorization (ID-JAG).
type Enterprise struct {
	// IdPTokenEndpoint is the enterprise IdP's token endpoint.
	IdPTokenEndpoint string
	// IdPClient is this client at the IdP.
	IdPClient Client
	// IDToken returns the user's ID token from the IdP.
	IDToken AssertionFunc
}

// DPoP configures DPoP proofs. Key signs them (ECDSA P-256 or RSA);
// nil: a fresh P-256 key per transport.
type DPoP struct {
	Key crypto.Signer
}

// validate checks the configuration and fills in defaults. It works on
// a copy: the caller's Config is never changed.
func (c Config) validate() (Config, error) {
	if c.ClientName == "" {
		c.ClientName = "snodo"
	}
	if c.RedirectURL == "" {
		c.RedirectURL = "http://127.0.0.1/callback"
	}
	if err := checkEndpoint("redirect URL", c.RedirectURL); err != nil {
		return c, err
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return c, fmt.Errorf("client metadata URL %q must be an HTTPS URL with a path", c.ClientMetadataURL)
		}
	}
	if c.MaxStepUps < 0 {
		return c, errors.New("MaxStepUps must not be negative")
	}
	if c.MaxStepUps == 0 {
		c.MaxStepUps = 2
	}
	if c.Store == nil {
		c.Store = &MemoryStore{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	grants := 0
	if c.ClientCredentials != nil {
		grants++
		if c.Client.ID == "" {
			return c, errors.New("client credentials need Client.ID")
		}
		if c.ClientCredentials.PrivateKey == nil && c.Client.Secret == "" {
			return c, errors.New("client credentials need Client.Secret or a PrivateKey")
		}
	}
	if c.JWTBearer != nil {
		grants++
	}
	if c.Enterprise != nil {
		grants++
		if c.Enterprise.IDToken == nil || c.Enterprise.IdPClient.ID == "" {
			return c, errors.New("enterprise-managed authorization needs IDToken and IdPClient.ID")
		}
		if err := checkEndpoint("IdP token endpoint", c.Enterprise.IdPTokenEndpoint); err != nil {
			return c, err
		}
	}
	if grants > 1 {
		return c, errors.New("choose one of ClientCredentials, JWTBearer and Enterprise")
	}
	if grants == 0 && c.Authorize == nil {
		return c, errors.New("the authorization code flow needs an Authorize function")
	}
	return c, nil
}

// defaultASTimeout bounds each request to an authorization server when
// the caller gave no HTTPClient.
const defaultASTimeout = 30 * time.Second
