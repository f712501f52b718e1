package snodo

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/oauth"
)

// OAuth says how ConnectHTTP authorizes with a protected MCP server
// (the MCP authorization specification: OAuth 2.1 with PKCE and resource
// indicators). snodo starts only when the server answers 401: it
// discovers the server's authorization server, identifies itself as the
// pre-registered client (ClientID), by its Client ID Metadata Document
// (ClientMetadataURL) or by dynamic registration, in that order, and runs
// the authorization code flow through Authorize. The extension fields
// replace that flow with a grant that needs no user; set at most one of
// ClientCredentials, JWTBearer and IDToken. docs/authorization.md
// describes every step.
type OAuth struct {
	// ClientID and ClientSecret are a pre-registered client, bound to
	// the authorization server ClientIssuer (empty: the first one it is
	// used with; another server later is an error unless it lets snodo
	// register).
	ClientID, ClientSecret, ClientIssuer string
	// ClientMetadataURL is the HTTPS URL of this client's Client ID
	// Metadata Document, used as client id where supported.
	ClientMetadataURL string
	// RedirectURL is where the authorization server sends the user
	// back: HTTPS, or HTTP to a loopback address. Default
	// "http://127.0.0.1/callback".
	RedirectURL string
	// Scopes are requested on top of those the server asks for.
	Scopes []string
	// Authorize is the interactive step: show the authorization URL to
	// the user, wait for the redirect to RedirectURL, and return its
	// query (code, state, iss). snodo never opens a browser; it checks
	// state and iss itself.
	Authorize func(ctx context.Context, authorizationURL string) (url.Values, error)
	// Store keeps the tokens. Default: in memory, shared by every
	// connection made with this option (a supervised client's new
	// session reuses the token, or refreshes it, without the user).
	Store TokenStore
	// Logger receives debug lines about each step; never a token or a
	// secret. Default: none.
	Logger *slog.Logger

	// ClientCredentials uses the client_credentials grant with
	// ClientID and ClientSecret, or with a JWT assertion signed by
	// PrivateKey (private_key_jwt) when it is set; SigningAlgorithm names
	// its JWS algorithm (default from the key).
	ClientCredentials bool
	PrivateKey        crypto.Signer
	SigningAlgorithm  string
	// JWTBearer uses the JWT-bearer grant (RFC 7523) with the assertion
	// it returns, such as a workload identity token.
	JWTBearer func(ctx context.Context) (string, error)
	// IDToken turns on enterprise-managed authorization: the user's ID
	// token it returns is exchanged at IdPTokenEndpoint (as the client
	// IdPClientID, IdPClientSecret) for an identity assertion grant,
	// which the MCP server's authorization server exchanges for a token.
	IDToken                                        func(ctx context.Context) (string, error)
	IdPTokenEndpoint, IdPClientID, IdPClientSecret string
	// DPoP binds the tokens to a key (RFC 9449) instead of bearer
	// tokens; DPoPKey is that key (default: a P-256 key made by
	// WithOAuth, shared by the connections made with the option).
	DPoP    bool
	DPoPKey crypto.Signer
}

// TokenStore keeps OAuth tokens by MCP server URL (the resource the token
// is for); OAuth.Store. It is the OAuth layer's type, which is internal,
// so its methods are listed here:
//
//	Load(ctx context.Context, resource string) (*OAuthToken, error) // nil and no error when it has none
//	Save(ctx context.Context, resource string, t *OAuthToken) error
//	Delete(ctx context.Context, resource string) error
//
// Calls come from any goroutine: implementations must be safe for
// concurrent use, and keep what they hold private to the user (it holds
// secrets; the command line's file store is mode 0600). An OAuthToken
// marshals to JSON and back whole, so a store may keep it as JSON.
type TokenStore = oauth.TokenStore

// OAuthToken is what a TokenStore keeps for one server: the tokens and
// which authorization server and client registration issued them (a
// refresh must go to the same ones). It is the OAuth layer's type, which
// is internal, so its fields are listed here:
//
//	AccessToken  string
//	TokenType    string    // "Bearer" or "DPoP"
//	RefreshToken string
//	Expiry       time.Time
//	Scopes       []string
//	Issuer       string    // the authorization server that issued it
//	Client                 // the client registration it was obtained with
//
// Its String, GoString and LogValue never show a token or a secret, so
// printing or logging one by mistake leaks nothing.
type OAuthToken = oauth.Token

// WithOAuth authorizes ConnectHTTP's requests as o says (default: no
// authorization; a 401 is an error). The token goes only to the server's
// origin, never to another host.
func WithOAuth(o OAuth) Option {
	cfg := o.config()
	if cfg.Store == nil {
		cfg.Store = &oauth.MemoryStore{}
	}
	var keyErr error
	if cfg.DPoP != nil && cfg.DPoP.Key == nil {
		// One key for every connection made with the option: a stored
		// token is bound to it.
		cfg.DPoP.Key, keyErr = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return func(c *config) error {
		if keyErr != nil {
			return errors.New("WithOAuth: making a DPoP key: " + keyErr.Error())
		}
		if _, err := oauth.NewTransport("https://check.invalid/", http.DefaultTransport, cfg); err != nil {
			return errors.New("WithOAuth: " + err.Error())
		}
		c.httpOption("WithOAuth")
		c.oauth = &cfg
		return nil
	}
}

// config translates o for internal/oauth.
func (o OAuth) config() oauth.Config {
	cfg := oauth.Config{
		Client:            oauth.Client{ID: o.ClientID, Secret: o.ClientSecret, Issuer: o.ClientIssuer},
		ClientMetadataURL: o.ClientMetadataURL,
		RedirectURL:       o.RedirectURL,
		Scopes:            append([]string(nil), o.Scopes...),
		Authorize:         o.Authorize,
		Store:             o.Store,
		Logger:            o.Logger,
		JWTBearer:         o.JWTBearer,
	}
	if o.ClientCredentials {
		cfg.ClientCredentials = &oauth.ClientCredentials{PrivateKey: o.PrivateKey, Algorithm: o.SigningAlgorithm}
	}
	if o.IDToken != nil {
		cfg.Enterprise = &oauth.Enterprise{
			IdPTokenEndpoint: o.IdPTokenEndpoint,
			IdPClient:        oauth.Client{ID: o.IdPClientID, Secret: o.IdPClientSecret},
			IDToken:          o.IDToken,
		}
	}
	if o.DPoP {
		cfg.DPoP = &oauth.DPoP{Key: o.DPoPKey}
	}
	return cfg
}

// authorized wraps base so that requests to serverURL carry its token,
// when WithOAuth was given; else it returns base.
func (c *config) authorized(serverURL string, base http.RoundTripper) (http.RoundTripper, error) {
	if c.oauth == nil {
		return base, nil
	}
	return oauth.NewTransport(serverURL, base, *c.oauth)
}

// authorizationFailed reports whether err, the server/discover probe's,
// ends the connection attempt rather than lead to the legacy fallback:
// the authorization the probe needed failed (a login the user refused,
// an authorization server that said no), or the server answered 401
// after it. initialize would only ask the user again and fail the same
// way: one login per connection attempt, and the probe's error is the
// one reported.
func authorizationFailed(err error) bool {
	var le *oauth.LoginError
	var se *connection.HTTPStatusError
	return errors.As(err, &le) || (errors.As(err, &se) && se.StatusCode == http.StatusUnauthorized)
}
