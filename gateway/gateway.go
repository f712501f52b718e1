package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Defaults of the Handler's limits (each has an Option).
const (
	defaultMaxBodyBytes       = 4 << 20
	defaultMaxSessions        = 1024
	defaultSessionIdleTimeout = 10 * time.Minute
	// readHeaderTimeout is what NewServer gives
	// http.Server.ReadHeaderTimeout: a client that sends its headers
	// slower than this is cut off (no slow-loris hold).
	readHeaderTimeout = 10 * time.Second
	// keepAlive is the interval of SSE comments on idle long-lived streams.
	keepAlive = 15 * time.Second
	// maxQueued bounds the messages waiting for a legacy session's GET
	// stream while none is open; past it the oldest is dropped.
	maxQueued = 256
)

// Handler serves one snodo.Session to MCP clients over Streamable HTTP,
// in both eras, as an http.Handler mounted at the MCP endpoint. Make it
// with New, give its ConnectOptions to whatever connects the session (so
// that server requests and notifications reach the gateway's clients),
// then Attach the session. Its methods are safe for concurrent use.
//
// Legacy clients (initialize, Mcp-Session-Id) get a session of their
// own, pinned to one pool member while that member lives; modern clients
// (2026-07-28, sessionless) have each request served by whichever member
// the session picks.
type Handler struct {
	cfg config
	log *slog.Logger

	mu      sync.RWMutex
	backend snodo.Session
	cache   *ListCache
	legacy  *side // for legacy clients; nil until Attach
	// AttachLegacy's connect, until it has made the legacy-era session
	// (then nil, and legacy is that session's side).
	legacyConnect func(ctx context.Context) (snodo.Session, error)

	lmu     sync.Mutex    // the legacy-era session's start
	lready  chan struct{} // closed when the start under way ended; nil: none began
	lerr    error         // the last start's error
	lfailed time.Time     // when it failed
	bg      sync.WaitGroup

	sessions *sessionTable
	calls    callTable
	listens  atomic.Int64 // modern subscriptions/listen streams open

	ctx    context.Context // the handler's life: Close cancels it
	cancel context.CancelFunc
	closed atomic.Bool
}

// Option configures a Handler; options validate their values.
type Option func(*config) error

type config struct {
	maxBody     int64
	maxSessions int
	idle        time.Duration
	origins     []string
	hosts       []string
	logger      *slog.Logger
	noCache     bool
}

// WithMaxBodyBytes bounds a POST body (default 4 MiB); a larger one is
// answered 413 without being read further.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("gateway.WithMaxBodyBytes: %d must be at least 1", n)
		}
		c.maxBody = n
		return nil
	}
}

// WithMaxSessions bounds the legacy sessions alive at once (default
// 1024), and apart from them the modern subscriptions/listen streams open
// at once. An initialize past it is answered 503 with Retry-After, after
// sessions idle past the idle timeout have been ended; a listen past it
// 503 with Retry-After.
func WithMaxSessions(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("gateway.WithMaxSessions: %d must be at least 1", n)
		}
		c.maxSessions = n
		return nil
	}
}

// WithSessionIdleTimeout ends a legacy session that has seen no request
// and holds no open stream for d (default 10 minutes); its client gets
// 404 and initializes again.
func WithSessionIdleTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("gateway.WithSessionIdleTimeout: %v must be positive", d)
		}
		c.idle = d
		return nil
	}
}

// WithAllowedOrigins lists the browser origins ("https://app.example")
// whose requests are served, besides same-host and loopback ones. A
// request carrying any other Origin is answered 403 (DNS rebinding
// protection). "*" allows every origin.
func WithAllowedOrigins(origins ...string) Option {
	return func(c *config) error {
		for _, o := range origins {
			if o != "*" {
				if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" {
					return fmt.Errorf("gateway.WithAllowedOrigins: %q is not an origin such as https://app.example", o)
				}
			}
		}
		c.origins = append([]string(nil), origins...)
		return nil
	}
}

// WithAllowedHosts lists the Host header values (host names, without
// port) served when the gateway listens on a loopback address. By
// default such a gateway serves only loopback names (localhost,
// 127.0.0.1, [::1]), so that a DNS name rebound to 127.0.0.1 cannot
// reach it. A gateway listening on another address serves any host.
func WithAllowedHosts(hosts ...string) Option {
	return func(c *config) error {
		c.hosts = append([]string(nil), hosts...)
		return nil
	}
}

// WithLogger receives the gateway's logs (default: slog.Default()).
// Tokens and other headers are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("gateway.WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithoutListCache makes tools/list, prompts/list and resources/list go
// to the backend every time instead of being answered from the cache.
func WithoutListCache() Option {
	return func(c *config) error { c.noCache = true; return nil }
}

// New makes a Handler with no session yet: it answers 503 until Attach.
// Close it when done with it: it runs a goroutine that ends idle
// sessions, and after Attach one that follows the session's lists.
func New(opts ...Option) (*Handler, error) {
	cfg := config{maxBody: defaultMaxBodyBytes, maxSessions: defaultMaxSessions, idle: defaultSessionIdleTimeout}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{cfg: cfg, log: cfg.logger, ctx: ctx, cancel: cancel}
	h.sessions = newSessionTable(h)
	return h, nil
}

// Attach gives the handler the session it serves, and starts following
// its list changes (for the cache and for clients) for as long as the
// handler lives. It may be called once.
func (h *Handler) Attach(s snodo.Session) error {
	if s == nil {
		return errors.New("gateway: Attach(nil)")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.backend != nil {
		return errors.New("gateway: Attach called twice; make one Handler per session")
	}
	h.backend = s
	main := h.newSide(s)
	h.cache = main.cache
	h.legacy = main
	go h.followLists(main, true)
	return nil
}

// listCache is the cache of the attached session (nil before Attach, or
// without one): notifications may reach the handler before Attach
// returns, so it is read under mu.
func (h *Handler) listCache() *ListCache {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cache
}

// Bounds of the legacy-era session's start (AttachLegacy).
const (
	// legacyStartWait bounds an initialize's wait for the start.
	legacyStartWait = 30 * time.Second
	// legacyRetry is how long a failed start's error answers the legacy
	// clients' initialize before the next one tries again.
	legacyRetry = 5 * time.Second
)

// AttachLegacy gives the handler the way to make a second session,
// connected to the same server in the legacy era
// (snodo.WithEra(snodo.EraLegacy)), for its legacy clients: a server that
// speaks both eras then serves each client in the client's own era, its
// legacy server requests and tools included, instead of the gateway
// translating a legacy client's requests for a modern server. connect
// runs once, when the first legacy client initializes, not before (a
// gateway whose clients are all modern starts no second server); ctx is
// the handler's life, so it may own what it makes (the caller still
// closes the session, as Attach's). An initialize waits for it at most
// 30 s; when it fails, that initialize and those of the next 5 s are
// answered 503 with its error, then the next one tries again. Call it
// after Attach, at most once.
func (h *Handler) AttachLegacy(connect func(ctx context.Context) (snodo.Session, error)) error {
	if connect == nil {
		return errors.New("gateway: AttachLegacy(nil)")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.backend == nil {
		return errors.New("gateway: AttachLegacy before Attach; attach the main session first")
	}
	if h.legacyConnect != nil || h.legacy.s != h.backend {
		return errors.New("gateway: AttachLegacy called twice")
	}
	h.legacyConnect = connect
	return nil
}

// legacyFor is the side a new legacy session goes to: the legacy-era
// session's, started now if AttachLegacy gave one and it has not started
// (waiting while ctx lasts, at most legacyStartWait), else the main one.
func (h *Handler) legacyFor(ctx context.Context) (*side, error) {
	h.mu.RLock()
	connect, sd := h.legacyConnect, h.legacy
	h.mu.RUnlock()
	if connect == nil {
		return sd, nil
	}
	h.lmu.Lock()
	if h.lready == nil || h.lerr != nil && time.Since(h.lfailed) > legacyRetry {
		h.lready, h.lerr = make(chan struct{}), nil
		h.bg.Add(1)
		go h.startLegacy(connect, h.lready)
	}
	ready := h.lready
	h.lmu.Unlock()
	t := time.NewTimer(legacyStartWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("the legacy-era connection has not started after %v", legacyStartWait)
	}
	h.lmu.Lock()
	err := h.lerr
	h.lmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("the legacy-era connection could not start: %w", err)
	}
	return h.legacySide(), nil
}

// startLegacy runs AttachLegacy's connect.
func (h *Handler) startLegacy(connect func(ctx context.Context) (snodo.Session, error), ready chan struct{}) {
	defer h.bg.Done()
	s, err := connect(h.ctx)
	if err == nil && s == nil {
		err = errors.New("it returned no session")
	}
	if err == nil {
		h.mu.Lock()
		sd := h.newSide(s)
		h.legacy, h.legacyConnect = sd, nil
		h.mu.Unlock()
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			h.followLists(sd, false)
		}()
	} else {
		h.log.Warn("gateway: the legacy-era connection did not start", "error", err)
	}
	h.lmu.Lock()
	h.lerr = err
	if err != nil {
		h.lfailed = time.Now()
	}
	h.lmu.Unlock()
	close(ready)
}

// side is one session as the gateway serves it: members to pin legacy
// sessions to, and its list cache.
type side struct {
	s         snodo.Session
	info      *backendInfo
	cache     *ListCache
	following chan struct{} // closed once the first Listen of followLists returned
}

func (h *Handler) newSide(s snodo.Session) *side {
	sd := &side{s: s, info: newBackendInfo(s), following: make(chan struct{})}
	if !h.cfg.noCache {
		sd.cache = newListCache(s, false)
	}
	return sd
}

func (h *Handler) legacySide() *side {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.legacy
}

// Close ends every legacy session and every open stream, and stops
// following the session. It does not close the session, which its
// owner closes. Idempotent.
func (h *Handler) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	h.cancel()
	h.sessions.closeAll()
	h.bg.Wait() // a legacy-era start under way ends with h.ctx
	return nil
}

func (h *Handler) session() snodo.Session {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.backend
}

// NewServer is an http.Server for h at addr with the timeouts a server
// facing unknown clients needs: ReadHeaderTimeout (10 s) against
// slow-loris clients, and an IdleTimeout for kept-alive connections.
// Streams stay open as long as their client reads them, so there is no
// WriteTimeout.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// ServeHTTP serves the MCP endpoint: POST (a request, a notification or
// a response), GET (a legacy session's stream) and DELETE (the end of a
// legacy session).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, why := h.checkOrigin(r); status != 0 {
		writeJSONError(w, status, nil, jsonrpc.CodeInvalidRequest, why, nil)
		return
	}
	if h.closed.Load() {
		writeJSONError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeConnectionClosed, "gateway: closed", nil)
		return
	}
	s := h.session()
	if s == nil {
		w.Header().Set("Retry-After", "1")
		writeJSONError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeConnectionClosed, "gateway: no session attached yet; retry", nil)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, s)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeJSONError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "gateway: method not allowed; use POST, GET or DELETE", nil)
	}
}

// checkOrigin is the DNS-rebinding guard: a gateway listening on a
// loopback address serves only loopback Host names (or WithAllowedHosts),
// and any Origin must be loopback, the request's own host, or listed in
// WithAllowedOrigins. It returns 0 when the request may go on, else 403
// (or 421 for a Host that is not served) and why.
func (h *Handler) checkOrigin(r *http.Request) (int, string) {
	local := false
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := a.(*net.TCPAddr); ok {
			local = ta.IP.IsLoopback()
		}
	}
	host := hostOnly(r.Host)
	if local && !isLoopbackName(host) && !contains(h.cfg.hosts, host) {
		return http.StatusForbidden, "gateway: Host " + quoteSafe(host) + " is not served on a loopback address (DNS rebinding protection); allow it with WithAllowedHosts"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return 0, ""
	}
	if contains(h.cfg.origins, "*") || contains(h.cfg.origins, origin) {
		return 0, ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return http.StatusForbidden, "gateway: malformed Origin header"
	}
	oh := hostOnly(u.Host)
	if isLoopbackName(oh) && (local || isLoopbackName(host)) {
		return 0, ""
	}
	if !local && strings.EqualFold(u.Host, r.Host) {
		return 0, ""
	}
	return http.StatusForbidden, "gateway: Origin " + quoteSafe(origin) + " is not allowed (DNS rebinding protection); allow it with WithAllowedOrigins"
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
