package oauth

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Token is what an authorization left behind for one MCP server: the
// access token, its refresh token, and which authorization server and
// client registration issued them (a refresh must go to the same ones).
// Its String, GoString and LogValue never show a token or a secret, so
// printing or logging a Token by mistake leaks nothing.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"` // "Bearer" or "DPoP"
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Issued is when the token was received: with Expiry, its life,
	// which sets how early it is refreshed (zero: unknown, a minute).
	Issued time.Time `json:"issued,omitzero"`
	Scopes []string  `json:"scopes,omitempty"`
	// Issuer is the authorization server that issued the token.
	Issuer string `json:"issuer,omitempty"`
	// Client is the registration the token was obtained with, bound to
	// Issuer: a dynamically registered client is reused with that server
	// only.
	Client Client `json:"client,omitzero"`
}

// Client is an OAuth client registration: its id, its secret if it is
// confidential, how it authenticates at the token endpoint
// ("client_secret_basic", "client_secret_post" or "none"; empty: chosen
// from the server's metadata), and the issuer of the authorization server
// it belongs to (empty for a pre-registered client: the first server it
// is used with). Its String never shows the secret.
type Client struct {
	ID         string `json:"client_id,omitempty"`
	Secret     string `json:"client_secret,omitempty"`
	AuthMethod string `json:"auth_method,omitempty"`
	Issuer     string `json:"issuer,omitempty"`
}

// String describes c without its secret.
func (c Client) String() string {
	s := "client " + c.ID
	if c.Secret != "" {
		s += " (confidential)"
	}
	return s
}

// GoString is String, so %#v does not show the secret either.
func (c Client) GoString() string { return c.String() }

// LogValue logs c without its secret.
func (c Client) LogValue() slog.Value { return slog.StringValue(c.String()) }

// valid reports whether t can be sent without refreshing it first: it
// has an access token that is not about to expire. "About to" is a
// margin proportional to the token's life (margin), so a token that
// lives 30 s is not refreshed before every request.
func (t *Token) valid(now time.Time) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || now.Add(t.margin()).Before(t.Expiry))
}

// maxExpiryMargin is the most a token is refreshed before its expiry.
const maxExpiryMargin = time.Minute

// margin is how long before its expiry t counts as expired: the lesser
// of a minute and a tenth of its life (a minute when its life is
// unknown: a token stored before Issued was kept).
func (t *Token) margin() time.Duration {
	if t.Issued.IsZero() || !t.Issued.Before(t.Expiry) {
		return maxExpiryMargin
	}
	return min(maxExpiryMargin, t.Expiry.Sub(t.Issued)/10)
}

// String describes t without any token or secret.
func (t Token) String() string {
	s := "token from " + t.Issuer
	if t.TokenType != "" {
		s += " (" + t.TokenType + ")"
	}
	if !t.Expiry.IsZero() {
		s += " expiring " + t.Expiry.UTC().Format(time.RFC3339)
	}
	if t.RefreshToken != "" {
		s += ", refreshable"
	}
	return s
}

// GoString is String, so %#v does not show the token either.
func (t Token) GoString() string { return t.String() }

// LogValue logs t without any token or secret.
func (t Token) LogValue() slog.Value { return slog.StringValue(t.String()) }

// TokenStore keeps tokens between requests and, if it is persistent,
// between runs. The key is the MCP server's canonical URL (the resource
// the token is for). Load returns nil and no error when it holds nothing
// for the key. Calls come from any goroutine; an implementation must be
// safe for concurrent use. A store holds secrets: keep it private to the
// user (the command line's file store is mode 0600).
type TokenStore interface {
	Load(ctx context.Context, resource string) (*Token, error)
	Save(ctx context.Context, resource string, t *Token) error
	Delete(ctx context.Context, resource string) error
}

// MemoryStore is a TokenStore in memory: tokens last as long as the
// process. The zero value is ready to use.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]Token
}

// Load returns a copy of the token saved for resource, or nil.
func (s *MemoryStore) Load(_ context.Context, resource string) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[resource]
	if !ok {
		return nil, nil
	}
	t.Scopes = append([]string(nil), t.Scopes...)
	return &t, nil
}

// Save keeps a copy of t for resource.
func (s *MemoryStore) Save(_ context.Context, resource string, t *Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]Token)
	}
	c := *t
	c.Scopes = append([]string(nil), t.Scopes...)
	s.m[resource] = c
	return nil
}

// Delete forgets the token for resource.
func (s *MemoryStore) Delete(_ context.Context, resource string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, resource)
	return nil
}
