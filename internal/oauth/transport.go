package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/weborigin"
)

// maxReplayBytes bounds a request body kept to be sent again after an
// authorization. MCP messages are far smaller.
const maxReplayBytes = 64 << 20

// Transport is an http.RoundTripper that authorizes the requests to one
// MCP server: it sends the server's token with each request to the
// server's origin (and to nothing else), and on a 401 or a 403
// insufficient_scope it runs discovery and a grant, then sends the
// request again. Requests to other hosts pass through untouched. Safe
// for concurrent use: one authorization runs at a time, and requests
// that meet a 401 meanwhile wait for it and use its token.
type Transport struct {
	base     http.RoundTripper
	cfg      Config
	as       *http.Client
	resource string // the canonical server URL; the store's key until discovery names the resource
	origin   string // the server's origin (weborigin.Of)
	dpop     *dpopSigner

	lock chan struct{} // held while authorizing; a channel so waits honour ctx

	mu         sync.Mutex
	tok        *Token
	loaded     bool
	gen        uint64 // bumped each time tok changes
	scopes     []string
	preIssuer  string
	registered map[string]Client // dynamic registrations by issuer
	rsNonce    string
	// noRefresh is 1 + the generation of the token whose refresh failed
	// (0: none): it is not tried again, before sending or on a 401.
	noRefresh uint64
	// failed is the last authorization's error when it failed, for the
	// token of generation failedGen, at failedAt: the requests that were
	// under way with that token meanwhile share its failure instead of
	// asking the user again.
	failed    error
	failedGen uint64
	failedAt  time.Time
}

// NewTransport authorizes requests to the MCP server at serverURL over
// base (nil: http.DefaultTransport). The caller's cfg is not changed.
func NewTransport(serverURL string, base http.RoundTripper, cfg Config) (*Transport, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	canon, _, err := canonicalURL(serverURL)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	cu, _ := url.Parse(canon)
	origin := weborigin.Of(cu)
	if err := checkEndpoint("MCP server", canon); err != nil {
		return nil, fmt.Errorf("oauth: refusing to send tokens: %w", err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base:       base,
		cfg:        cfg,
		resource:   canon,
		origin:     origin,
		lock:       make(chan struct{}, 1),
		registered: map[string]Client{},
	}
	if cfg.DPoP != nil {
		t.dpop, err = newDPoPSigner(cfg.DPoP.Key)
		if err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: base, Timeout: defaultASTimeout}
	}
	c := *hc
	c.Transport = &asTransport{t: t, base: hc.Transport}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t.as = &c
	return t, nil
}

// StoreKey is the key under which a TokenStore keeps the token of the
// MCP server at serverURL: its canonical URL.
func StoreKey(serverURL string) (string, error) {
	canon, _, err := canonicalURL(serverURL)
	return canon, err
}

// canonicalURL is serverURL without fragment, query kept, scheme and
// host in lower case, without a trailing slash (RFC 8707 section 2).
func canonicalURL(serverURL string) (canon, origin string, err error) {
	u, err := url.Parse(serverURL)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("MCP server URL %q is not an absolute URL", serverURL)
	}
	u.Fragment, u.RawFragment = "", ""
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	origin = u.Scheme + "://" + u.Host
	return strings.TrimSuffix(u.String(), "/"), origin, nil
}

// ours reports whether u goes to the server's origin (scheme, host and
// port, the default port filled in): the only place a token is sent. A
// redirect to another port of the same host is another origin.
func (t *Transport) ours(u *url.URL) bool {
	return weborigin.Of(u) == t.origin
}

// RoundTrip sends req with the server's token and authorizes on 401 and
// 403 insufficient_scope. It returns the server's 401 or 403 as is when
// the authorizations it may try are spent, and an error naming the
// step that failed when an authorization fails.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.ours(req.URL) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	began := time.Now()
	body, err := replayable(req)
	if err != nil {
		return nil, err
	}
	tok, gen, err := t.current(ctx)
	if err != nil {
		return nil, err
	}
	var authorized bool
	refreshed := t.refreshFailed(gen) // a refresh that failed is not tried again
	stepUps, nonceRetries := 0, 0
	for {
		r := req.Clone(ctx)
		if body != nil {
			r.Body, r.GetBody = body()
		}
		if err := t.attach(r, tok); err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			return resp, err
		}
		ch := parseChallenge(resp.Header)
		if ch.dpopNonce != "" && t.dpop != nil {
			t.mu.Lock()
			t.rsNonce = ch.dpopNonce
			t.mu.Unlock()
		}
		var next *Token
		switch {
		case resp.StatusCode == http.StatusUnauthorized && ch.err == "use_dpop_nonce" && t.dpop != nil && nonceRetries < 2:
			nonceRetries++
			drain(resp)
			continue
		case resp.StatusCode == http.StatusUnauthorized && !authorized:
			drain(resp)
			refresh := !refreshed && tok != nil && tok.RefreshToken != ""
			if refresh {
				refreshed = true
			} else {
				authorized = true
			}
			next, gen, err = t.reauthorize(ctx, ch, gen, refresh, nil, began)
		case resp.StatusCode == http.StatusForbidden && ch.err == "insufficient_scope" && stepUps < t.cfg.MaxStepUps:
			drain(resp)
			stepUps++
			next, gen, err = t.reauthorize(ctx, ch, gen, false, ch.scope, began)
		default:
			return resp, nil
		}
		if err != nil {
			return nil, &LoginError{err: err}
		}
		tok = next
	}
}

// LoginError is a request's error when the authorization it needed
// failed (discovery, the grant, the user's step): the request was not
// sent again. errors.As finds it in the error of the HTTP request.
type LoginError struct{ err error }

func (e *LoginError) Error() string { return e.err.Error() }

// Unwrap is the authorization's error.
func (e *LoginError) Unwrap() error { return e.err }

// refreshFailed reports whether the refresh of the token of generation
// gen failed already.
func (t *Transport) refreshFailed(gen uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.noRefresh == gen+1
}

// replayable returns a function that gives a fresh copy of req's body
// each time, or nil when req has none.
func replayable(req *http.Request) (func() (io.ReadCloser, func() (io.ReadCloser, error)), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	raw, err := io.ReadAll(io.LimitReader(req.Body, maxReplayBytes+1))
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("oauth: reading the request body: %w", err)
	}
	if len(raw) > maxReplayBytes {
		return nil, fmt.Errorf("oauth: request body larger than %d bytes", maxReplayBytes)
	}
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	return func() (io.ReadCloser, func() (io.ReadCloser, error)) {
		b, _ := get()
		return b, get
	}, nil
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// attach puts tok on r: "Authorization: Bearer …", or for a DPoP-bound
// token "Authorization: DPoP …" with a fresh proof for r.
func (t *Transport) attach(r *http.Request, tok *Token) error {
	if tok == nil {
		return nil
	}
	if strings.EqualFold(tok.TokenType, "DPoP") {
		if t.dpop == nil {
			return errors.New("oauth: the stored token is DPoP-bound but DPoP is not configured")
		}
		t.mu.Lock()
		nonce := t.rsNonce
		t.mu.Unlock()
		proof, err := t.dpop.proof(r.Method, r.URL, nonce, tok.AccessToken)
		if err != nil {
			return err
		}
		r.Header.Set("Authorization", "DPoP "+tok.AccessToken)
		r.Header.Set("DPoP", proof)
		return nil
	}
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return nil
}

// current returns the token to send now, loading it from the store the
// first time, and refreshing it first if it expired and can be.
func (t *Transport) current(ctx context.Context) (*Token, uint64, error) {
	t.mu.Lock()
	if !t.loaded {
		t.mu.Unlock()
		tok, err := t.cfg.Store.Load(ctx, t.resource)
		if err != nil {
			return nil, 0, fmt.Errorf("oauth: loading the token for %s: %w", t.resource, err)
		}
		t.mu.Lock()
		if !t.loaded {
			t.tok, t.loaded = tok, true
			if tok != nil {
				t.scopes = append([]string(nil), tok.Scopes...)
			}
		}
	}
	tok, gen := t.tok, t.gen
	t.mu.Unlock()
	if tok == nil || tok.valid(time.Now()) || tok.RefreshToken == "" || t.refreshFailed(gen) {
		return tok, gen, nil
	}
	// About to expire, with a refresh token: refresh before sending. A
	// refresh that fails sends the token there is (it may still be
	// valid) and is not tried again for it; only the server's 401 leads
	// to a login.
	next, g, err := t.refreshEarly(ctx, gen)
	if err != nil {
		t.cfg.Logger.DebugContext(ctx, "oauth: refresh before sending failed; sending the token there is", "server", t.resource, "err", err)
		return tok, gen, nil
	}
	return next, g, nil
}

// refreshEarly refreshes the token of generation gen before it expires,
// and only refreshes: a failure is recorded (noRefresh), never turned
// into a login. If another request replaced the token meanwhile, that
// one is used.
func (t *Transport) refreshEarly(ctx context.Context, gen uint64) (*Token, uint64, error) {
	if err := t.acquire(ctx); err != nil {
		return nil, 0, err
	}
	defer t.release()
	t.mu.Lock()
	prev, cur := t.tok, t.gen
	t.mu.Unlock()
	if cur != gen {
		return prev, cur, nil
	}
	tok, err := t.refresh(ctx, challenge{}, prev)
	if err != nil {
		t.mu.Lock()
		t.noRefresh = gen + 1
		t.mu.Unlock()
		return nil, 0, err
	}
	return t.install(ctx, tok)
}

// install saves tok and makes it the token sent, of a new generation.
func (t *Transport) install(ctx context.Context, tok *Token) (*Token, uint64, error) {
	if err := t.cfg.Store.Save(ctx, t.resource, tok); err != nil {
		return nil, 0, fmt.Errorf("oauth: saving the token for %s: %w", t.resource, err)
	}
	t.mu.Lock()
	t.tok = tok
	t.gen++
	g := t.gen
	t.mu.Unlock()
	return tok, g, nil
}

// acquire takes the authorization lock, or gives up with ctx.
func (t *Transport) acquire(ctx context.Context) error {
	select {
	case t.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("oauth: waiting for an authorization under way: %w", context.Cause(ctx))
	}
}

func (t *Transport) release() { <-t.lock }

// reauthorize gets a new token after the one of generation gen failed:
// by refreshing it (refresh), or by a full grant with the challenge's
// scopes added (more: a step-up). If another request already replaced
// the token meanwhile, that one is used instead; if an authorization for
// the same token failed after the request began (began), that failure
// is its error, and the user is not asked again.
func (t *Transport) reauthorize(ctx context.Context, ch challenge, gen uint64, refresh bool, more []string, began time.Time) (*Token, uint64, error) {
	if err := t.acquire(ctx); err != nil {
		return nil, 0, err
	}
	defer t.release()
	t.mu.Lock()
	if t.gen != gen && more == nil {
		tok, g := t.tok, t.gen
		t.mu.Unlock()
		return tok, g, nil
	}
	if t.failed != nil && t.failedGen == gen && t.failedAt.After(began) {
		// An authorization for this same token failed while this request
		// was under way: one login per need, not one per request.
		err := t.failed
		t.mu.Unlock()
		return nil, 0, err
	}
	prev := t.tok
	t.mu.Unlock()

	var tok *Token
	var err error
	if refresh && prev != nil && prev.RefreshToken != "" {
		tok, err = t.refresh(ctx, ch, prev)
		if err != nil {
			t.mu.Lock()
			t.noRefresh = gen + 1
			t.mu.Unlock()
			t.cfg.Logger.DebugContext(ctx, "oauth: refresh failed; authorizing again", "server", t.resource, "err", err)
			tok, err = t.login(ctx, ch, prev, more, gen)
		}
	} else {
		tok, err = t.login(ctx, ch, prev, more, gen)
	}
	if err != nil {
		return nil, 0, err
	}
	return t.install(ctx, tok)
}

// login runs a full authorization for the token of generation gen and
// records how it ended, so that requests waiting for it share a failure.
func (t *Transport) login(ctx context.Context, ch challenge, prev *Token, more []string, gen uint64) (*Token, error) {
	tok, err := t.authorize(ctx, ch, prev, more)
	t.mu.Lock()
	t.failed, t.failedGen, t.failedAt = err, gen, time.Now()
	t.mu.Unlock()
	return tok, err
}

// Forget drops the token of this transport's server from memory and
// from the store (a logout).
func (t *Transport) Forget(ctx context.Context) error {
	t.mu.Lock()
	t.tok, t.loaded = nil, true
	t.gen++
	t.mu.Unlock()
	return t.cfg.Store.Delete(ctx, t.resource)
}

// CloseIdleConnections closes the idle connections of the base
// transport and of the authorization server client, so that
// http.Client.CloseIdleConnections reaches them through a Transport.
func (t *Transport) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := t.base.(closer); ok {
		c.CloseIdleConnections()
	}
	t.as.CloseIdleConnections()
}
