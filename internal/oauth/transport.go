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
	body, err := replayable(req)
	if err != nil {
		return nil, err
	}
	tok, gen, err := t.current(ctx)
	if err != nil {
		return nil, err
	}
	var refreshed, authorized bool
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
			next, gen, err = t.reauthorize(ctx, ch, gen, refresh, nil)
		case resp.StatusCode == http.StatusForbidden && ch.err == "insufficient_scope" && stepUps < t.cfg.MaxStepUps:
			drain(resp)
			stepUps++
			next, gen, err = t.reauthorize(ctx, ch, gen, false, ch.scope)
		default:
			return resp, nil
		}
		if err != nil {
			return nil, err
		}
		tok = next
	}
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
	if tok == nil || tok.valid(time.Now()) || tok.RefreshToken == "" {
		return tok, gen, nil
	}
	// Expired with a refresh token: refresh before sending. A failed
	// refresh leaves the request to meet its 401.
	next, g, err := t.reauthorize(ctx, challenge{}, gen, true, nil)
	if err != nil {
		t.cfg.Logger.DebugContext(ctx, "oauth: refresh before sending failed", "server", t.resource, "err", err)
		return tok, gen, nil
	}
	return next, g, nil
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
// the token meanwhile, that one is used instead.
func (t *Transport) reauthorize(ctx context.Context, ch challenge, gen uint64, refresh bool, more []string) (*Token, uint64, error) {
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
	prev := t.tok
	t.mu.Unlock()

	var tok *Token
	var err error
	if refresh && prev != nil && prev.RefreshToken != "" {
		tok, err = t.refresh(ctx, ch, prev)
		if err != nil {
			t.cfg.Logger.DebugContext(ctx, "oauth: refresh failed; authorizing again", "server", t.resource, "err", err)
			tok, err = t.authorize(ctx, ch, prev, more)
		}
	} else {
		tok, err = t.authorize(ctx, ch, prev, more)
	}
	if err != nil {
		return nil, 0, err
	}
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
