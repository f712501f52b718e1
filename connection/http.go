package connection

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/internal/callerrun"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
)

// httpPeer is the Streamable HTTP transport's Channel: every message the
// connection sends is its own HTTP POST to the MCP endpoint, and every
// JSON-RPC message the server sends back (a JSON body, or the events of
// an SSE stream) goes to the connection's Peer.Receive. The request
// table, timeouts, cancellation, progress, streams and the handler path
// are the connection's, as for stdio; only what HTTP adds lives here:
// sessions, headers, status codes, SSE framing and resumption, and the
// bond between a POST and the stream that answers it (an answer on a
// request's stream to any other request is dropped and logged).
//
// A request that fails at the HTTP level (an error status, a body that is
// no JSON-RPC, a stream that breaks or goes past MaxLineBytes) is
// completed here with a local error (Peer.Fail); the connection lives
// on. The peer ends, and the connection with it, when the server ends
// the session (a 404 for the session's ID: ErrSessionExpired) or cannot
// be reached at all (ErrServerUnreachable), or when the connection
// closes it (Close, which ends a legacy session with a DELETE first).
type httpPeer struct {
	peer Peer
	url  string
	u    *url.URL // url parsed once
	// tmpl is every request's start: its URL is u (a request is a copy
	// made with WithContext, which then gets its method and headers).
	tmpl   *http.Request
	client *http.Client
	idle   *http.Transport // the transport made here, whose idle connections are closed at the end; nil: the caller's
	direct *http.Transport // idle, when a request may skip the client (do); else nil
	header http.Header     // the caller's extra headers
	max    int             // MaxLineBytes: the largest message taken
	logger *slog.Logger

	ctx    context.Context // done once the peer ends: aborts every exchange
	cancel context.CancelFunc
	wg     sync.WaitGroup // running exchanges, the GET stream and the poster
	// work hands an exchange to an idle worker (unbuffered: a send
	// succeeds only when one waits); workers counts the running ones.
	work    chan *exchange
	workers sync.WaitGroup

	// The messages waiting behind a POST that must be taken before
	// anything later goes (a notification or an answer: the server
	// answers 202 once it has it), posted in order by one goroutine
	// (postLoop) while any wait. A request that comes while none waits
	// starts its exchange at once. Bounded: past httpMaxQueued messages
	// the server is taken to have stopped taking them, and Send fails
	// (the connection stops with ErrNotReading).
	qmu     sync.Mutex
	queue   [][]byte
	posting bool
	flushed chan struct{} // closed when the queue empties while closing; nil otherwise

	mu      sync.Mutex
	over    bool   // ended: no new exchange starts
	session string // Mcp-Session-Id (legacy), once the server gave one
	version string // the negotiated legacy version, for MCP-Protocol-Version
	// sessionValue and versionValue are session and version as header
	// values, made once (nil while empty).
	sessionValue, versionValue []string
	exchanges                  map[int64]*exchange
	tools                      map[string][]paramHeader    // x-mcp-header annotations by tool name
	names                      map[string]nameValue        // Mcp-Name values by the raw JSON string of the name
	metaSeen                   atomic.Pointer[metaVersion] // the last _meta's version (versionOf)
	listening                  bool                        // the legacy GET stream was started
	sess                       sessionState                // what a renewal replays (httpsession.go)

	renewMu  sync.Mutex    // one session renewal at a time
	renewing chan struct{} // non-nil while a renewal runs (under mu), closed when it ends

	endOnce  sync.Once
	reason   error         // why it ended, before ended is closed
	ended    chan struct{} // closed as the peer ends
	finished chan struct{} // closed once every exchange is over (and the session deleted)
}

// HTTP is the Transport of a Streamable HTTP MCP endpoint at rawURL
// (http:// or https://): each message the connection sends is a POST of
// its own, answered with JSON or an SSE stream. client makes every
// request (nil: a client of snodo's own, whose idle connections are
// closed when the connection ends; a caller's client is left as it is:
// wrap its Transport for authorization, proxies or TLS); header is added
// to every request. snodo.ConnectHTTP uses it, and falls back to SSE for
// a server of the older transport; HTTP goes to the endpoint as it is.
func HTTP(rawURL string, client *http.Client, header http.Header) Transport {
	return &httpTransport{url: rawURL, client: client, header: header.Clone()}
}

// httpTransport is the Streamable HTTP Transport of one endpoint.
type httpTransport struct {
	url    string
	client *http.Client
	header http.Header
}

// String names the transport in log records: its URL without
// credentials or query.
func (t *httpTransport) String() string { return safeURL(t.url) }

// Limits of the HTTP transport.
const (
	// httpMaxRetries bounds the retries of a POST answered 429 or 503 with
	// a Retry-After the request can wait for.
	httpMaxRetries = 3
	// httpMaxRetryAfter caps one Retry-After wait.
	httpMaxRetryAfter = 30 * time.Second
	// httpMaxResumes bounds the resumptions in a row of a legacy SSE
	// stream that brought no event.
	httpMaxResumes = 5
	// httpDefaultRetry is the wait before resuming a stream whose server
	// gave no retry field.
	httpDefaultRetry = time.Second
	// httpErrorBody bounds what is read of an error status's body.
	httpErrorBody = 64 << 10
	// httpDeleteTimeout bounds the DELETE that ends a legacy session.
	httpDeleteTimeout = 2 * time.Second
	// httpMaxQueued bounds the messages waiting behind a POST.
	httpMaxQueued = 4096
	// httpMaxIdlePerHost is how many idle connections to the endpoint
	// the connection's own transport keeps (http.DefaultTransport's
	// MaxIdleConns).
	httpMaxIdlePerHost = 100
)

// Open makes the peer of the Streamable HTTP endpoint: nothing goes on
// the wire until the connection sends its first message.
func (t *httpTransport) Open(_ context.Context, peer Peer) (Channel, error) {
	u, err := url.Parse(t.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("snodo: %q is not an http:// or https:// URL of an MCP endpoint", safeURL(t.url))
	}
	p := &httpPeer{
		peer: peer, logger: peer.Logger,
		url: t.url, u: u, client: t.client, work: make(chan *exchange), header: t.header.Clone(), max: peer.MaxMessageBytes,
		exchanges: map[int64]*exchange{}, tools: map[string][]paramHeader{}, names: map[string]nameValue{},
		ended: make(chan struct{}), finished: make(chan struct{}),
	}
	if p.client == nil {
		p.idle = http.DefaultTransport.(*http.Transport).Clone()
		// Every call in flight is a POST of its own: keep as many idle
		// connections to the one endpoint as the transport keeps in all
		// (100), not the default 2, or 64 calls in flight dial a new
		// connection for most requests.
		p.idle.MaxIdleConnsPerHost = httpMaxIdlePerHost
		p.client = &http.Client{Transport: p.idle}
		if u.User == nil {
			p.direct = p.idle // see do
		}
	}
	p.client = p.withRedirectPolicy(p.client) // redirect.go
	p.tmpl, _ = http.NewRequest(http.MethodPost, "", nil)
	p.tmpl.URL, p.tmpl.Host, p.tmpl.Header = u, u.Host, nil
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// safeURL is rawURL as it may be printed or logged: without its user
// information, query and fragment, which may carry credentials.
func safeURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}

// Send sends one message of the connection's. A request starts its
// exchange at once, unless messages wait to be posted before it; a
// notification or an answer is posted in order by postLoop.
func (p *httpPeer) Send(msg []byte) error {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if !p.posting && isRequestLine(msg) {
		p.send(bytes.Clone(msg))
		return nil
	}
	return p.enqueue(msg)
}

// enqueue queues a copy of msg for postLoop, which it starts if none
// runs. The caller holds qmu.
func (p *httpPeer) enqueue(msg []byte) error {
	return p.enqueueOwned(bytes.Clone(msg))
}

// enqueueOwned is enqueue of a copy the peer already owns.
func (p *httpPeer) enqueueOwned(msg []byte) error {
	if len(p.queue) >= httpMaxQueued {
		return fmt.Errorf("%d messages wait to be posted to %s, which takes none: %w", len(p.queue), safeURL(p.url), sentinel.ErrNotReading)
	}
	p.queue = append(p.queue, msg)
	if !p.posting {
		p.posting = true
		p.wg.Add(1)
		go p.postLoop()
	}
	return nil
}

// PrepareRequest makes the exchange of a request line
// (callerrun.Sender): a copy of the line and the headers that mirror it,
// from what the engine says the line holds, with no scan of it. It takes
// no lock of the engine's and none held for long of the peer's.
func (p *httpPeer) PrepareRequest(msg []byte, r callerrun.Request) callerrun.Prepared {
	params := bytes.TrimSpace(r.Params)
	if len(params) == 0 || params[0] != '{' {
		params = nil
	}
	meta := bytes.TrimSpace(r.Meta)
	if r.Meta == nil && params != nil {
		meta, _ = jsonrpc.Member(params, "_meta")
	}
	ex := p.newExchange(r.ID, r.Method, bytes.Clone(msg), p.headersOf(true, r.Method, params, meta))
	ex.answerScanned = r.Answer
	return ex
}

// Discard releases an exchange PrepareRequest made that is not sent.
func (ex *exchange) Discard() { ex.abort() }

// SendRequest sends a prepared request (callerrun.Sender), in order with
// the messages Send was given before it. A request that goes at once
// (nothing waits to be posted before it) is returned for its caller to
// run, on the caller's goroutine; one queued behind other messages goes
// as Send sends it, and nil is returned.
func (p *httpPeer) SendRequest(prep callerrun.Prepared) (callerrun.Runner, error) {
	ex := prep.(*exchange) // PrepareRequest's
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.posting {
		// Behind the queued messages, as Send would have put it: the
		// line goes through postLoop, which makes its exchange anew.
		ex.abort()
		return nil, p.enqueueOwned(ex.body)
	}
	if !p.admit(ex) {
		ex.abort()
		return nil, nil // ended: the connection's stop fails the request
	}
	ex.inline = true
	return ex, nil
}

// isRequestLine reports whether msg, a line the connection built, is a
// request: its "id" member comes before its "method" (the connection's
// encoders write requests as {"jsonrpc":"2.0","id":…,"method":…}).
func isRequestLine(msg []byte) bool {
	return bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","id":`)) && bytes.Contains(msg, []byte(`"method":`))
}

// postLoop sends the queued messages in order, one at a time, until the
// queue is empty.
func (p *httpPeer) postLoop() {
	defer p.wg.Done()
	for {
		p.qmu.Lock()
		if len(p.queue) == 0 {
			p.posting = false
			if p.flushed != nil {
				close(p.flushed)
				p.flushed = nil
			}
			p.qmu.Unlock()
			return
		}
		msg := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.qmu.Unlock()
		p.send(msg)
	}
}

// Close posts what is queued (for at most closeFlushTimeout), ends the
// peer, ends a legacy session with a DELETE (within httpDeleteTimeout)
// and returns once all that is done.
func (p *httpPeer) Close() error {
	p.qmu.Lock()
	var flushed chan struct{}
	if p.posting {
		if p.flushed == nil {
			p.flushed = make(chan struct{})
		}
		flushed = p.flushed
	}
	p.qmu.Unlock()
	if flushed != nil {
		t := time.NewTimer(closeFlushTimeout)
		select {
		case <-flushed:
		case <-t.C:
		case <-p.ended:
		}
		t.Stop()
	}
	p.end(nil)
	<-p.finished
	return nil
}

// Done is closed once the peer has ended and every exchange is over.
func (p *httpPeer) Done() <-chan struct{} { return p.finished }

// Err is why the peer ended on its own; nil when Close ended it.
func (p *httpPeer) Err() error {
	select {
	case <-p.ended:
	default:
		return nil
	}
	if errors.Is(p.reason, errPeerClosed) {
		return nil
	}
	return p.reason
}

// errPeerClosed is the reason of a peer that Close ended.
var errPeerClosed = errors.New("closed by the connection")

// newExchange makes the exchange of request id: its line (body, a copy
// the peer owns) and the headers that mirror it.
func (p *httpPeer) newExchange(id int64, method string, body []byte, h http.Header) *exchange {
	// Its context is not under p.ctx: end aborts the exchanges it finds
	// admitted, which spares each exchange joining and leaving one shared
	// parent's set.
	return &exchange{p: p, id: id, method: method, body: body, header: h, modern: h[headerVersion] != nil && p.sessionless()}
}

// begin admits ex and starts it on a worker goroutine.
func (p *httpPeer) begin(ex *exchange) {
	if !p.admit(ex) {
		ex.abort()
		return // ended: the connection's stop fails the request
	}
	p.start(ex)
}

// send sends one line the connection wrote, a copy the peer owns.
func (p *httpPeer) send(line []byte) {
	env, err := jsonrpc.Scan(line)
	if err != nil {
		return // the connection writes only JSON-RPC
	}
	h := p.messageHeaders(&env)
	body := line
	switch env.Kind {
	case jsonrpc.KindRequest:
		id, _ := env.IntID()
		p.begin(p.newExchange(id, env.MethodName(), body, h))
	case jsonrpc.KindNotification:
		if env.MethodName() == "notifications/cancelled" {
			if ex := p.cancelled(env.Params); ex != nil && ex.modern {
				// Modern HTTP: closing the request's stream is the
				// cancellation; there is nothing to post.
				ex.abort()
				return
			} else if ex != nil {
				// A legacy request on a worker: the server is told first,
				// then the stream is let go. (One its caller ran was let go
				// as the caller gave up, before this was posted.)
				defer ex.abort()
			}
		}
		p.post(env.MethodName(), body, h)
	case jsonrpc.KindResponse:
		p.post("a response", body, h)
	}
}

// httpWorkerIdle is how long a worker goroutine waits for its next
// exchange before it exits.
const httpWorkerIdle = 2 * time.Second

// start runs ex on an idle worker goroutine, or on a new one. A worker
// takes exchange after exchange while they keep coming: its stack, grown
// by the HTTP client's deep calls, is not grown anew for each request.
func (p *httpPeer) start(ex *exchange) {
	select {
	case p.work <- ex:
	default:
		p.workers.Add(1)
		go p.worker(ex)
	}
}

func (p *httpPeer) worker(ex *exchange) {
	defer p.workers.Done()
	var idle *time.Timer
	for {
		ex.run()
		ex = nil // not kept alive while waiting
		if idle == nil {
			idle = time.NewTimer(httpWorkerIdle)
		} else {
			idle.Reset(httpWorkerIdle)
		}
		select {
		case ex = <-p.work:
		case <-idle.C:
			return
		case <-p.ctx.Done():
			idle.Stop()
			return
		}
	}
}

// sessionless reports whether no legacy session is open.
func (p *httpPeer) sessionless() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.session == "" && p.version == ""
}

// admit records a new exchange, unless the peer has ended.
func (p *httpPeer) admit(ex *exchange) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over {
		return false
	}
	p.exchanges[ex.id] = ex
	p.wg.Add(1)
	return true
}

// cancelled is the exchange a notifications/cancelled names, nil when
// none runs.
func (p *httpPeer) cancelled(params []byte) *exchange {
	raw, _ := jsonrpc.Member(params, "requestId")
	id, ok := jsonrpc.ParseIntID(raw)
	if !ok {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanges[id]
}

// post sends a notification or an answer and waits, within the
// connection's timeout, for the server to take it (202).
func (p *httpPeer) post(what string, body []byte, h http.Header) {
	p.postOnce(what, body, h, true)
}

// postOnce is post; renew says a forgotten session may be renewed (and
// the message posted again) once.
func (p *httpPeer) postOnce(what string, body []byte, h http.Header, renew bool) {
	ctx, cancel := p.ctx, context.CancelFunc(func() {})
	if t := p.peer.Timeout; t > 0 {
		ctx, cancel = context.WithTimeout(ctx, t)
	}
	defer cancel()
	req := p.newRequest(ctx, http.MethodPost, body, h)
	resp, err := p.do(req)
	if err != nil {
		if p.ctx.Err() == nil {
			p.unreachable(err)
			p.logger.Warn("snodo: could not post to the MCP endpoint", "message", what, "error", cause(err))
		}
		return
	}
	defer drain(resp.Body)
	switch {
	case resp.StatusCode/100 == 2:
		if what == "notifications/initialized" {
			p.remember(what, body, h)
			// The GET stream is open (or refused) before any later
			// request reaches the server, so that what the server sends
			// there is never the answer to a request still on its way.
			p.listen(ctx)
		}
	case sessionGone(req, resp, readGoneBody(resp)):
		old := req.Header.Get(headerSession)
		if renew && p.renew(old) {
			p.postOnce(what, body, h, false)
			return
		}
		p.expire(old)
	default:
		p.logger.Warn("snodo: the MCP endpoint refused a message", "message", what, "status", sampleString(resp.Status))
	}
}

// newRequest builds a request to the endpoint with the headers every
// message carries. The body is a bytes.Reader, so GetBody is set: a
// redirect or a RoundTripper that retries (authorization) can replay it.
func (p *httpPeer) newRequest(ctx context.Context, method string, body []byte, h http.Header) *http.Request {
	return p.buildRequest(ctx, method, body, h, false, false)
}

// buildRequest is newRequest; own says h is the request's to keep and
// fill in (an exchange's first POST), so no second map is made;
// renewal says the request is one of a session renewal's own (the others
// wait for the renewal to end: see sessionHeaders).
func (p *httpPeer) buildRequest(ctx context.Context, method string, body []byte, h http.Header, own, renewal bool) *http.Request {
	// A copy of the template made at start: the URL, parsed once, is
	// shared (neither net/http nor a RoundTripper changes a request's).
	req := p.tmpl.WithContext(ctx)
	req.Method = method
	if own {
		req.Header = h
		for k, v := range p.header {
			if _, set := h[k]; !set {
				h[k] = append([]string(nil), v...)
			}
		}
	} else {
		req.Header = make(http.Header, len(p.header)+len(h)+4)
		for k, v := range p.header {
			req.Header[k] = append([]string(nil), v...)
		}
		for k, v := range h {
			req.Header[k] = v
		}
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		// io.NopCloser of a *bytes.Reader, a body net/http knows is in
		// memory: it writes the headers and the body in one write(2)
		// (a body of another type makes it send the headers first).
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.Header["Content-Type"] = contentTypeJSON
		req.Header["Accept"] = acceptPost
	} else {
		req.Header["Accept"] = acceptGet
	}
	session, version := p.sessionHeaders(ctx, renewal)
	if session != nil {
		req.Header[headerSession] = session
	}
	if version != nil && req.Header[headerVersion] == nil {
		req.Header[headerVersion] = version
	}
	return req
}

// sessionHeaders returns the session's and the protocol version's header
// values. While a session renewal runs, a request that is not one of its
// own first waits for it to end (bounded by ctx: a request whose ctx ends
// goes as it is, and fails on its ctx): sent in the renewal's window, it
// would carry no session (the old one is cleared) or one the server has
// not seen initialized yet, which servers refuse with a 400 that names no
// session ("Server not initialized") and so could not be told from a
// real refusal.
func (p *httpPeer) sessionHeaders(ctx context.Context, renewal bool) (session, version []string) {
	p.mu.Lock()
	for !renewal && p.renewing != nil {
		ch := p.renewing
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			p.mu.Lock()
			return p.sessionValue, p.versionValue
		}
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	return p.sessionValue, p.versionValue
}

// Header values every request of a kind carries, shared: the transport
// only reads them.
var (
	contentTypeJSON = []string{"application/json"}
	acceptPost      = []string{"application/json, text/event-stream"}
	acceptGet       = []string{"text/event-stream"}
)

// emit hands one message the server sent to the connection; owned says
// msg is a buffer of its own (a JSON body), else it is copied (an SSE
// event's data, whose buffer is reused).
func (p *httpPeer) emit(msg []byte, owned bool) {
	if !owned {
		msg = bytes.Clone(msg)
	}
	p.peer.Receive(msg)
}

// fail completes request id with a local error.
func (p *httpPeer) fail(id int64, err error) { p.peer.Fail(id, err) }

// expire ends the peer: the server forgot the session, and renewing it
// did not help (httpsession.go).
func (p *httpPeer) expire(session string) {
	p.mu.Lock()
	current := p.session == session || p.session == "" // "": a renewal failed
	p.mu.Unlock()
	if current {
		p.end(&endReason{what: "the server forgot the HTTP session (404, or a 400 naming it, for its Mcp-Session-Id) and a new session could not serve the connection (it failed to start, or was forgotten again at once); connect again", cause: sentinel.ErrSessionExpired})
	}
}

// unreachable ends the peer when err says the server cannot be reached
// at all (nothing listens, the name does not resolve).
// It reports whether it did.
func (p *httpPeer) unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	if (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) {
		p.end(&endReason{what: "the MCP endpoint " + safeURL(p.url) + " cannot be reached: " + cause(err), cause: sentinel.ErrServerUnreachable})
		return true
	}
	return false
}

// cause is what went wrong in an HTTP client error, without the URL
// (*url.Error adds it, query and all, which may carry a key).
func cause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return boundedCause(ue.Err.Error()) // httpedges.go
	}
	return boundedCause(err.Error())
}

// end ends the peer with reason (nil: the connection closed it) and,
// on a goroutine of its own, finishes: every exchange aborted and over,
// the legacy session deleted (when the connection closed it), idle
// connections closed, the stdout pipe closed.
func (p *httpPeer) end(reason error) {
	p.endOnce.Do(func() {
		p.mu.Lock()
		p.over = true // no exchange is admitted from now on
		session := p.session
		for _, ex := range p.exchanges {
			ex.abort()
		}
		p.mu.Unlock()
		closed := reason == nil
		if closed {
			reason = errPeerClosed
		}
		p.reason = reason
		p.cancel()
		close(p.ended)
		go p.finish(session, closed)
	})
}

func (p *httpPeer) finish(session string, closed bool) {
	p.wg.Wait()
	p.workers.Wait() // they see p.ctx done and exit
	if closed && session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), httpDeleteTimeout)
		req := p.newRequest(ctx, http.MethodDelete, nil, nil)
		if resp, err := p.do(req); err == nil {
			drain(resp.Body)
		}
		cancel()
	}
	if p.idle != nil {
		p.idle.CloseIdleConnections()
	}
	close(p.finished)
}

// drain reads a little of what is left of body, so its connection can be
// reused, and closes it.
func drain(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	body.Close()
}

// exchange is one request's POST and the stream that answers it.
type exchange struct {
	p        *httpPeer
	id       int64
	method   string
	body     []byte
	header   http.Header
	modern   bool        // no session: a broken stream is not resumed, closing it cancels
	ctx      exchangeCtx // ex.ctx, done once the exchange is aborted (exctx.go)
	answered bool        // the response for id was delivered
	// inline: the exchange runs on its caller's goroutine (Run); its
	// stream, if the answer is one, goes to a worker (handed, then sse).
	inline      bool
	sse         io.ReadCloser
	interrupted atomic.Bool // Interrupt was called
	// answerScanned, when not nil, takes the response in place of
	// Peer.Receive, with the scan deliver made of it (callerrun.Request).
	answerScanned func(env jsonrpc.Envelope, msg []byte)
	renewed       bool // a forgotten session was renewed for this request once
	retries       int  // the POST's retries after 429 or 503 so far
	ignored       int  // events of its streams that were no JSON-RPC message
}

// abort aborts the exchange: its context is done.
func (ex *exchange) abort() { ex.ctx.cancel() }

// errHandedOff: the exchange's stream goes on on a worker.
var errHandedOff = errors.New("handed to a worker")

// run performs the exchange and settles the request if the server did
// not: on a worker, or on the caller's goroutine (Run) until the answer
// turns out to be a stream, which a worker then reads.
func (ex *exchange) run() {
	p := ex.p
	var err error
	if body := ex.sse; body != nil {
		ex.sse = nil
		err = ex.stream(body)
	} else {
		err = ex.do()
	}
	if err == errHandedOff {
		p.start(ex)
		return
	}
	if err != nil && !ex.answered && ex.ctx.Err() == nil {
		p.fail(ex.id, err)
	}
	ex.abort()
	p.mu.Lock()
	if p.exchanges[ex.id] == ex {
		delete(p.exchanges, ex.id)
	}
	p.mu.Unlock()
	p.wg.Done()
}

// Run runs the exchange on its caller's goroutine (callerrun.Runner).
func (ex *exchange) Run() (cancelled bool) {
	ex.run()
	// Interrupt closed the request's stream before its answer: for a
	// modern request that is its cancellation. A legacy server is not
	// told by a closed stream (a disconnection is no cancellation): the
	// caller posts notifications/cancelled, after the stream is let go.
	return ex.modern && ex.interrupted.Load() && !ex.answered
}

// Interrupt aborts the exchange run by its caller, who gave up.
func (ex *exchange) Interrupt() {
	ex.interrupted.Store(true)
	ex.abort()
}

func (ex *exchange) do() error {
	p := ex.p
	for attempt := 0; ; attempt++ {
		ex.retries = attempt
		// The first POST takes the exchange's header map and fills it in,
		// but initialize's, which the session keeps for its renewals
		// (remember). A retry builds one anew (net/http may still read
		// the last): for a legacy request from the line again, since the
		// first one took a session id that a renewal may have replaced.
		if attempt > 0 && !ex.modern && ex.method != "initialize" {
			ex.header = p.lineHeaders(ex.body)
		}
		req := p.buildRequest(&ex.ctx, http.MethodPost, ex.body, ex.header, attempt == 0 && ex.method != "initialize", false)
		resp, err := p.do(req)
		if err != nil {
			if ex.ctx.Err() != nil {
				return nil // aborted: whoever aborted settles the request
			}
			if p.unreachable(err) {
				return httpError(jsonrpc.CodeConnectionClosed, ex.method+": "+safeURL(p.url)+" cannot be reached: "+cause(err), sentinel.ErrServerUnreachable, jsonrpc.ErrConnectionClosed, err)
			}
			return httpError(jsonrpc.CodeInternalError, ex.method+": the HTTP request to "+safeURL(p.url)+" failed: "+cause(err), err)
		}
		if resp.StatusCode/100 == 2 {
			switch ex.method {
			case "initialize":
				if sid := resp.Header.Get(headerSession); sid != "" {
					if err := checkSessionID(sid); err != nil { // httpheaders.go
						drain(resp.Body)
						return httpError(jsonrpc.CodeInternalError, ex.method+": "+err.Error(), err)
					}
					p.mu.Lock()
					p.session, p.sessionValue = sid, []string{sid}
					p.mu.Unlock()
				}
				p.remember(ex.method, ex.body, ex.header)
			case "resources/subscribe", "resources/unsubscribe":
				p.remember(ex.method, ex.body, ex.header)
			}
			return ex.answer(resp)
		}
		wait, retry := retryAfter(resp)
		if retry && attempt < httpMaxRetries {
			drain(resp.Body)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ex.ctx.Done():
				t.Stop()
				return nil
			}
		}
		if sessionGone(req, resp, readGoneBody(resp)) {
			drain(resp.Body)
			old := req.Header.Get(headerSession)
			if !ex.renewed && p.renew(old) {
				ex.renewed = true // the server never took the request: send it again, once
				continue
			}
			p.expire(old)
			return httpError(jsonrpc.CodeConnectionClosed, ex.method+": the server ended the HTTP session ("+resp.Status+" for its Mcp-Session-Id) and a new one could not serve the request", sentinel.ErrSessionExpired, jsonrpc.ErrConnectionClosed)
		}
		return ex.statusError(resp)
	}
}

// do sends one request of the peer's: every POST, GET and DELETE to the
// endpoint goes through here. Through the connection's own client (no
// WithHTTPClient, no user in the URL) it goes straight to the client's
// transport: an http.Client adds nothing such a request needs (no
// cookie jar, no timeout, no basic authorization) but a copy of its
// headers for redirects and their bookkeeping, a tenth of net/http's
// cost per call on a profile at 64 calls in flight. A redirect, which
// the server sends without taking the request, is rare: the request is
// then made again through the client, which follows it under the
// redirect policy (redirect.go).
func (p *httpPeer) do(req *http.Request) (*http.Response, error) {
	if p.direct == nil {
		return p.client.Do(req)
	}
	op := req.Method[:1] + strings.ToLower(req.Method[1:]) // as http.Client names it: "Post"
	resp, err := p.direct.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: op, URL: safeURL(p.url), Err: err}
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if resp.Header.Get("Location") == "" || (req.Body != nil && req.GetBody == nil) {
			return resp, nil // as http.Client would: nothing to follow, or no body to send again
		}
		drain(resp.Body)
		again := req.Clone(req.Context())
		if req.GetBody != nil {
			if again.Body, err = req.GetBody(); err != nil {
				return nil, &url.Error{Op: op, URL: safeURL(p.url), Err: err}
			}
		}
		return p.client.Do(again)
	}
	return resp, nil
}

// retryAfter reads a 429 or 503's Retry-After (seconds, or an HTTP date):
// how long to wait, and whether to retry at all.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	} else {
		return 0, false
	}
	if d < 0 {
		d = 0
	}
	return d, d <= httpMaxRetryAfter
}

// statusError turns an error status into the request's error: the
// JSON-RPC error the body carries, as the server's own; else a local
// error with the status and the start of the body.
func (ex *exchange) statusError(resp *http.Response) error {
	defer drain(resp.Body)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, httpErrorBody))
	if env, err := jsonrpc.Scan(bytes.TrimSpace(body)); err == nil && env.Kind == jsonrpc.KindResponse && env.Error != nil {
		if id, ok := env.IntID(); !ok || id == ex.id {
			if e := serverError(env.Error); e != nil {
				ex.answered = true
				ex.p.fail(ex.id, e)
				return nil
			}
		}
	}
	status := sampleString(resp.Status) // the reason phrase is the server's
	msg := fmt.Sprintf("%s: the MCP endpoint answered HTTP %s", ex.method, status)
	msg += bodyNote(resp, body, ex.p.url) + retryNote(resp, ex.retries) // httpedges.go
	return httpError(jsonrpc.CodeInternalError, msg, &HTTPStatusError{StatusCode: resp.StatusCode, Status: status})
}

// serverError decodes a JSON-RPC error object; nil when it is none.
func serverError(raw []byte) *jsonrpc.Error {
	e := new(jsonrpc.Error)
	if len(raw) == 0 || raw[0] != '{' || jsonUnmarshal(raw, e) != nil || (e.Code == 0 && e.Message == "") {
		return nil
	}
	return e
}

// answer reads a 2xx answer: one JSON message or an SSE stream.
func (ex *exchange) answer(resp *http.Response) error {
	switch ct := mediaType(resp.Header); ct {
	case "text/event-stream":
		if ex.inline {
			// The caller waits for a stream's events (progress, its
			// answer) as for any other: a worker reads it.
			ex.inline, ex.sse = false, resp.Body
			return errHandedOff
		}
		return ex.stream(resp.Body)
	case "application/json":
		body, err := readBody(resp, ex.p.max)
		if err == nil && int64(len(body)) == resp.ContentLength {
			resp.Body.Close() // read to its end: the connection is free again
		} else {
			defer drain(resp.Body)
		}
		if err != nil {
			if ex.ctx.Err() != nil {
				return nil
			}
			return httpError(jsonrpc.CodeInternalError, ex.method+": reading the answer failed: "+err.Error(), sentinel.ErrStreamBroken, err)
		}
		if len(body) > ex.p.max {
			return tooLarge(ex.method, ex.p.max)
		}
		if !ex.deliver(body, true) {
			return httpError(jsonrpc.CodeInternalError, ex.method+": the server's answer is not a JSON-RPC message: "+sample(bytes.TrimSpace(body)), sentinel.ErrNotJSONRPC)
		}
		if !ex.answered {
			return httpError(jsonrpc.CodeInternalError, ex.method+": the server's JSON answer is not the response to this request", sentinel.ErrNotJSONRPC)
		}
		return nil
	}
	defer drain(resp.Body)
	return unexpectedAnswer(ex.method, ex.p.url, resp) // httpedges.go
}

// stream reads the request's SSE stream until its response. A legacy
// stream that ends before it, after an event with an ID, is resumed with
// a GET carrying Last-Event-ID, after the server's retry; a modern one
// is not resumable: the request fails.
func (ex *exchange) stream(body io.ReadCloser) error {
	p := ex.p
	lastID, retry := "", httpDefaultRetry
	for resumes := 0; ; {
		events, err := p.readSSE(body, ex.deliverStream, &lastID, &retry)
		body.Close()
		switch {
		case ex.answered || ex.ctx.Err() != nil:
			return nil
		case errors.Is(err, errTooLarge):
			return tooLarge(ex.method, p.max)
		case isEndpointEvent(err):
			return oldSSEError(ex.method, p.url, err) // sse.go
		case ex.modern || lastID == "":
			why := "the stream ended"
			if err != nil {
				why = "the stream broke (" + err.Error() + ")"
			}
			causes := []error{sentinel.ErrStreamBroken}
			if ex.ignored > 0 {
				why += fmt.Sprintf(", after %d event(s) that are no JSON-RPC message,", ex.ignored)
				causes = append(causes, sentinel.ErrNotJSONRPC)
			}
			return httpError(jsonrpc.CodeInternalError, ex.method+": "+why+" before the response; the request may be sent again", causes...)
		}
		if events > 0 {
			resumes = 0
		}
		if resumes++; resumes > httpMaxResumes {
			return httpError(jsonrpc.CodeInternalError, fmt.Sprintf("%s: the stream was resumed %d times in a row without an event; giving up", ex.method, httpMaxResumes), sentinel.ErrStreamBroken)
		}
		t := time.NewTimer(backoff(retry, resumes-1)) // sse.go
		select {
		case <-t.C:
		case <-ex.ctx.Done():
			t.Stop()
			return nil
		}
		req := p.newRequest(&ex.ctx, http.MethodGet, nil, nil)
		req.Header.Set("Last-Event-ID", lastID)
		resp, err := p.do(req)
		if err != nil {
			if ex.ctx.Err() != nil {
				return nil
			}
			p.unreachable(err)
			continue // counts as a resumption without an event
		}
		if sessionGone(req, resp, readGoneBody(resp)) {
			drain(resp.Body)
			// The server took the request in the session it forgot: it
			// may have run, so it is not sent again.
			if old := req.Header.Get(headerSession); !p.renew(old) {
				p.expire(old)
			}
			return httpError(jsonrpc.CodeInternalError, ex.method+": the server forgot the HTTP session while the answer streamed ("+resp.Status+"); the request may have run", sentinel.ErrSessionExpired)
		}
		if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			return ex.statusError(resp)
		}
		body = resp.Body
	}
}

// mediaType is the media type of h's Content-Type, without parameters:
// the two forms servers send are recognised without parsing.
func mediaType(h http.Header) string {
	v := h.Get("Content-Type")
	switch v {
	case "application/json", "text/event-stream":
		return v
	}
	ct, _, _ := mime.ParseMediaType(v)
	return ct
}

// readBody reads a JSON answer's body, up to max+1 bytes (more means too
// large): in one buffer of the declared length when there is one.
func readBody(resp *http.Response, max int) ([]byte, error) {
	n := resp.ContentLength
	if n < 0 || n > int64(max) {
		return io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	}
	body := make([]byte, n, n+1) // room for the newline emit adds
	if _, err := io.ReadFull(resp.Body, body); err != nil {
		return nil, err
	}
	return body, nil
}

// deliver hands one message of the exchange's answer to the connection;
// false when it is no JSON-RPC message (then it is dropped). The stream
// belongs to the request it carried: a response to any other request is
// dropped and logged, never delivered (it would complete that request
// with what may not be its answer). owned: see emit.
func (ex *exchange) deliver(msg []byte, owned bool) bool {
	env, err := jsonrpc.Scan(msg)
	if err != nil && err != jsonrpc.ErrNoOutcome {
		return false
	}
	if env.Kind == jsonrpc.KindResponse {
		id, ok := env.IntID()
		if !ok || id != ex.id {
			ex.p.logger.Warn("snodo: dropped a response on a request's stream that answers another request",
				"method", ex.method, "stream_of", ex.id, "id", string(env.ID))
			return true
		}
		ex.answered = true
		if sniffed, changed := ex.p.sniff(ex.method, id, &env, msg); changed {
			msg, owned = sniffed, true
		} else if owned && ex.answerScanned != nil {
			ex.answerScanned(env, msg) // the engine need not scan it again
			return true
		}
	}
	ex.p.emit(msg, owned)
	return true
}

// deliverStream is deliver for an SSE event, logging what is dropped.
func (ex *exchange) deliverStream(msg []byte) {
	if !ex.deliver(msg, false) {
		ex.ignored++
		ex.p.logger.Warn("snodo: ignored an SSE event that is not a JSON-RPC message", "method", ex.method, "data", sample(msg))
	}
}

// listen opens the legacy GET stream once the session is initialized,
// and returns once the server has answered the first GET (or refused
// it, or ctx is done).
func (p *httpPeer) listen(ctx context.Context) {
	p.mu.Lock()
	if p.over || p.listening || p.version == "" {
		p.mu.Unlock()
		return
	}
	p.listening = true
	p.wg.Add(1)
	p.mu.Unlock()
	opened := make(chan struct{})
	go p.getStream(opened)
	select {
	case <-opened:
	case <-ctx.Done():
	}
}

// getStream keeps the legacy GET stream open while the peer runs: server
// requests and notifications unrelated to a request arrive on it. A
// server that offers none (405, or any other refusal) is left alone.
// opened is closed once the first GET has its answer.
func (p *httpPeer) getStream(opened chan struct{}) {
	defer p.wg.Done()
	var once sync.Once
	open := func() { once.Do(func() { close(opened) }) }
	defer open()
	lastID, retry := "", httpDefaultRetry
	for failures := 0; p.ctx.Err() == nil; {
		req := p.newRequest(p.ctx, http.MethodGet, nil, nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := p.do(req)
		open()
		wait := retry
		switch {
		case err != nil:
			if p.ctx.Err() != nil {
				return
			}
			// Not the end of the connection: a server restarting on
			// its address refuses for a moment. The next POST says
			// whether it can be reached at all.
			failures++
			wait = backoff(retry, failures-1) // sse.go
		case sessionGone(req, resp, readGoneBody(resp)):
			drain(resp.Body)
			if old := req.Header.Get(headerSession); !p.renew(old) {
				p.expire(old)
				return
			}
			wait = 0 // the new session's GET stream at once
		case resp.StatusCode/100 == 5:
			drain(resp.Body)
			failures++
			wait = backoff(retry, failures-1) // sse.go
		default:
			ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
				drain(resp.Body)
				return // no GET stream here
			}
			before := lastID
			events, _ := p.readSSE(resp.Body, func(msg []byte) {
				env, err := jsonrpc.Scan(msg)
				switch {
				case err != nil && err != jsonrpc.ErrNoOutcome:
				case env.Kind == jsonrpc.KindResponse:
					// No request's stream: an answer here answers nothing
					// this stream carried.
					p.logger.Warn("snodo: dropped a response on the GET stream, which carries no request", "id", string(env.ID))
				default:
					p.emit(msg, false)
				}
			}, &lastID, &retry)
			resp.Body.Close()
			if failures++; events > 0 || lastID != before {
				failures = 0 // a stream that brought nothing backs off as a failure does
			}
			wait = backoff(retry, max(failures-1, 0)) // sse.go: the first wait is the retry
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
			return
		}
	}
}

// HTTPStatusError is the cause a request's local error wraps when the
// MCP endpoint answered it with an HTTP error status and no JSON-RPC
// error (errors.As finds it).
type HTTPStatusError struct {
	StatusCode int    // 500, 429, …
	Status     string // "500 Internal Server Error"
}

// Error is "HTTP " and the status.
func (e *HTTPStatusError) Error() string { return "HTTP " + e.Status }

// httpError is a request's local error for an HTTP failure.
func httpError(code int, msg string, causes ...error) error {
	return jsonrpc.NewLocalError(code, msg, causes...)
}

// tooLarge is the local error of a request whose answer went past max.
func tooLarge(method string, max int) error {
	return httpError(jsonrpc.CodeInternalError,
		fmt.Sprintf("%s: a message from the server is larger than %d bytes (WithMaxLineBytes); the request failed, the connection lives on", method, max),
		sentinel.ErrMessageTooLarge)
}
