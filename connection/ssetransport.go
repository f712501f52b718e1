package connection

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/internal/weborigin"
)

// The HTTP+SSE transport of protocol version 2024-11-05, which the
// Streamable HTTP transport replaced and which many deployed servers
// still speak: the client GETs the server's URL and keeps the SSE stream
// it answers open for the whole connection. The stream's first event,
// "endpoint", names the URL every message of the client's is POSTed to
// (the server answers 202); everything the server sends, answers
// included, arrives as "message" events on the stream. Only the legacy
// era runs over it (initialize opens the session; the stream is the
// session): a server/discover request is failed at once, unsent.
//
// It is a Transport of its own, not a mode of the Streamable HTTP one:
// nothing in http.go knows it. snodo.ConnectHTTP falls back to it, and
// SSE gives it as a Transport value.

// SSE is the Transport of a server that speaks the HTTP+SSE transport of
// protocol version 2024-11-05 at rawURL (the URL of its SSE stream, often
// ending in /sse): the transport that mcpServers entries of "type": "sse"
// name. client makes every request (nil: a client of snodo's own);
// header is added to every request. snodo.ConnectHTTP reaches such a
// server by itself (it falls back to this transport when its first POST
// is refused with 400, 404 or 405); SSE goes to it directly. Only the
// legacy era runs over it.
func SSE(rawURL string, client *http.Client, header http.Header) Transport {
	return &sseTransport{url: rawURL, client: client, header: header.Clone()}
}

// sseTransport is the HTTP+SSE Transport of one server.
type sseTransport struct {
	url    string
	client *http.Client
	header http.Header
}

// String names the transport in log records: its URL without
// credentials or query.
func (t *sseTransport) String() string { return safeURL(t.url) }

// Limits of the HTTP+SSE transport.
const (
	// sseEndpointWait bounds the wait for the stream's endpoint event
	// (besides the ctx given to Open).
	sseEndpointWait = 5 * time.Second
	// sseMaxQueued bounds the messages waiting to be posted.
	sseMaxQueued = 4096
	// ssePostWait bounds one POST when the connection has no per-request
	// timeout.
	ssePostWait = 30 * time.Second
	// sseMaxPosts bounds the requests posted at once, each on a POST of
	// its own; past it, they wait their turn in the queue.
	sseMaxPosts = 64
	// sseEndpointBytes bounds the endpoint event's data.
	sseEndpointBytes = 8 << 10
)

// sseChannel is the HTTP+SSE transport's Channel.
type sseChannel struct {
	peer     Peer
	url      string   // the SSE URL, as given
	endpoint *url.URL // where messages are POSTed
	client   *http.Client
	idle     *http.Transport // made here: its idle connections are closed at the end; nil: the caller's
	header   http.Header
	logger   *slog.Logger

	ctx    context.Context // done once the channel ends: aborts the stream and every POST
	cancel context.CancelFunc
	wg     sync.WaitGroup // the stream reader and the poster

	mu       sync.Mutex
	queue    [][]byte // messages not yet posted, in order
	posting  bool     // the poster runs
	inflight int      // requests posted at once, on POSTs of their own (at most sseMaxPosts)
	closing  bool     // Close was called: no more messages
	over     bool     // ended: no goroutine starts
	flushed  chan struct{}

	endOnce sync.Once
	reason  error // why it ended, before ended is closed; nil: Close
	ended   chan struct{}
	done    chan struct{}
}

// Open GETs the SSE stream and returns once its endpoint event has come
// (within sseEndpointWait and ctx), so that messages can be posted.
func (t *sseTransport) Open(ctx context.Context, p Peer) (Channel, error) {
	u, err := url.Parse(t.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("snodo: %q is not an http:// or https:// URL of an SSE endpoint", safeURL(t.url))
	}
	s := &sseChannel{peer: p, url: t.url, client: t.client, header: t.header.Clone(), logger: p.Logger,
		ended: make(chan struct{}), done: make(chan struct{})}
	if s.client == nil {
		s.idle = http.DefaultTransport.(*http.Transport).Clone()
		s.idle.MaxIdleConnsPerHost = sseMaxPosts + 2 // the posts in flight, the poster and the stream
		s.client = &http.Client{Transport: s.idle}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	body, events, err := s.connect(ctx, u)
	if err != nil {
		s.cancel()
		s.closeIdle()
		return nil, err
	}
	s.wg.Add(1)
	go s.readLoop(body, events)
	return s, nil
}

// connect GETs the stream and reads it up to its endpoint event. The
// GET runs on the channel's ctx (it outlives Open), cancelled if ctx
// ends or sseEndpointWait passes before the endpoint came.
func (s *sseChannel) connect(ctx context.Context, u *url.URL) (io.ReadCloser, *sseReader, error) {
	where := safeURL(s.url)
	var timedOut, ctxDone bool
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() { mu.Lock(); ctxDone = true; mu.Unlock(); s.cancel() })
	timer := time.AfterFunc(sseEndpointWait, func() { mu.Lock(); timedOut = true; mu.Unlock(); s.cancel() })
	settled := func() error {
		stop()
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ctxDone:
			return fmt.Errorf("snodo: opening the SSE stream of %s: %w", where, ctx.Err())
		case timedOut:
			return fmt.Errorf("snodo: %s sent no endpoint event within %s: it does not speak the HTTP+SSE transport (2024-11-05)", where, sseEndpointWait)
		}
		return nil
	}
	req := s.newRequest(s.ctx, http.MethodGet, u, nil)
	resp, err := s.client.Do(req)
	if err != nil {
		if why := settled(); why != nil {
			return nil, nil, why
		}
		if dialFailed(err) {
			return nil, nil, fmt.Errorf("snodo: the SSE endpoint %s cannot be reached: %s: %w", where, cause(err), sentinel.ErrServerUnreachable)
		}
		return nil, nil, fmt.Errorf("snodo: the GET of the SSE stream of %s failed: %s", where, cause(err))
	}
	if ct := mediaType(resp.Header); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		settled()
		drain(resp.Body)
		err := fmt.Errorf("snodo: %s answered the GET of its SSE stream with %s and Content-Type %q, not an SSE stream: it does not speak the HTTP+SSE transport (2024-11-05)",
			where, safetext.Visible(resp.Status), safetext.Visible(resp.Header.Get("Content-Type")))
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%w: %w", err, &HTTPStatusError{StatusCode: resp.StatusCode, Status: resp.Status})
		}
		return nil, nil, err
	}
	events := newSSEReader(resp.Body, sseEndpointBytes, nil) // sse.go
	events.owned = true
	ev, err := events.next()
	if err == nil && ev.overlong {
		err = fmt.Errorf("its endpoint event is longer than %d bytes", sseEndpointBytes)
	}
	if why := settled(); why != nil {
		resp.Body.Close()
		return nil, nil, why
	}
	if err == nil && ev.name != "endpoint" {
		err = fmt.Errorf("its first event is %q, not endpoint", safetext.Visible(cmp.Or(ev.name, "message")))
	}
	if err != nil {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("snodo: the SSE stream of %s brought no endpoint event (%v): it does not speak the HTTP+SSE transport (2024-11-05)", where, err)
	}
	endpoint, err := resolveEndpoint(u, strings.TrimSpace(string(ev.data)))
	if err != nil {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("snodo: the SSE stream of %s: %w", where, err)
	}
	s.endpoint = endpoint
	events.setMax(s.peer.MaxMessageBytes)
	return resp.Body, events, nil
}

// resolveEndpoint resolves the endpoint event's URI against the SSE URL
// and refuses one on another origin (scheme, host and port): a server
// must not send the client's messages, and the headers that authorize
// them, somewhere else.
func resolveEndpoint(base *url.URL, ref string) (*url.URL, error) {
	r, err := url.Parse(ref)
	if err != nil || ref == "" {
		return nil, fmt.Errorf("its endpoint event names no URL (%q)", safetext.Visible(sampleString(ref)))
	}
	e := base.ResolveReference(r)
	if !weborigin.Same(base, e) {
		return nil, fmt.Errorf("its endpoint event names %s, on another origin than the SSE stream's (%s://%s): refused",
			safetext.Visible(safeURL(e.String())), base.Scheme, base.Host)
	}
	e.Fragment, e.RawFragment = "", ""
	return e, nil
}

// readLoop hands the stream's message events to the connection until
// the stream ends, which ends the channel: the stream is the session.
func (s *sseChannel) readLoop(body io.ReadCloser, events *sseReader) {
	defer s.wg.Done()
	defer body.Close()
	for {
		ev, err := events.next()
		if err != nil {
			if s.ctx.Err() == nil {
				why := "the server closed it"
				if err != io.EOF {
					why = "it broke: " + cause(err)
				}
				s.end(&endReason{what: "the SSE stream of " + safeURL(s.url) + " ended (" + why + "); the HTTP+SSE session is over: connect again", cause: sentinel.ErrStreamEnded})
			}
			return
		}
		switch {
		case ev.name != "" && ev.name != "message":
			s.logger.Debug("snodo: ignored an SSE event that is not a message", "event", safetext.Visible(ev.name))
		case ev.overlong:
			s.logger.Warn("snodo: discarded an overlong message from the server; the request it answered will time out",
				"max_line_bytes", s.peer.MaxMessageBytes)
		case len(bytes.TrimSpace(ev.data)) > 0:
			s.peer.Receive(ev.data)
		}
	}
}

// Send queues msg to be posted; the poster posts the queue in order.
func (s *sseChannel) Send(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing || s.over:
		return errChannelClosed
	case len(s.queue) >= sseMaxQueued:
		return fmt.Errorf("%d messages wait to be posted to %s, which takes none: %w", len(s.queue), safeURL(s.endpoint.String()), sentinel.ErrNotReading)
	}
	if !s.posting && s.inflight < sseMaxPosts && isRequestLine(msg) {
		// Nothing waits before it: a request goes at once, on its own
		// POST, as over Streamable HTTP (its answer comes on the stream,
		// whichever POST ends first).
		s.inflight++
		s.wg.Add(1)
		go s.postRequest(bytes.Clone(msg))
		return nil
	}
	s.queue = append(s.queue, bytes.Clone(msg))
	if !s.posting {
		s.posting = true
		s.wg.Add(1)
		go s.postLoop()
	}
	return nil
}

// postRequest posts one request that went at once (Send).
func (s *sseChannel) postRequest(msg []byte) {
	defer s.wg.Done()
	s.post(msg)
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
}

// postLoop posts the queued messages in order until the queue is empty
// or the channel ends: a notification or an answer is taken (its POST
// answered) before anything after it goes; a request goes on a POST of
// its own while at most sseMaxPosts run, else in turn.
func (s *sseChannel) postLoop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(s.queue) == 0 || s.ctx.Err() != nil {
			s.queue, s.posting = nil, false
			if s.flushed != nil {
				close(s.flushed)
				s.flushed = nil
			}
			s.mu.Unlock()
			return
		}
		msg := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if s.inflight < sseMaxPosts && isRequestLine(msg) {
			// Whatever came before it has been taken: it may go on a
			// POST of its own while the queue goes on.
			s.inflight++
			s.wg.Add(1) // this loop is counted: the count is not zero
			s.mu.Unlock()
			go s.postRequest(msg)
			continue
		}
		s.mu.Unlock()
		s.post(msg)
	}
}

// post POSTs one message to the endpoint. A request the server refused
// is failed (the connection lives on); a 404 means the server forgot the
// session, which ends the channel.
func (s *sseChannel) post(msg []byte) {
	env, err := jsonrpc.Scan(msg)
	if err != nil {
		return // the connection writes only JSON-RPC
	}
	id, isRequest := int64(0), env.Kind == jsonrpc.KindRequest
	what := env.MethodName()
	if isRequest {
		id, _ = env.IntID()
		if what == "server/discover" {
			s.peer.Fail(id, httpError(jsonrpc.CodeMethodNotFound, "server/discover: the HTTP+SSE transport (2024-11-05) carries only the legacy era; initialize opens its session"))
			return
		}
	} else if env.Kind == jsonrpc.KindResponse {
		what = "a response"
	}
	wait := ssePostWait
	if s.peer.Timeout > 0 {
		wait = s.peer.Timeout
	}
	ctx, cancel := context.WithTimeout(s.ctx, wait)
	defer cancel()
	resp, err := s.client.Do(s.newRequest(ctx, http.MethodPost, s.endpoint, msg))
	switch {
	case err != nil && s.ctx.Err() != nil:
		return // ended: the connection's stop settles the request
	case err != nil && dialFailed(err):
		s.end(&endReason{what: "the SSE endpoint " + safeURL(s.url) + " cannot be reached: " + cause(err), cause: sentinel.ErrServerUnreachable})
		return
	case err != nil:
		s.refused(isRequest, id, what, httpError(jsonrpc.CodeInternalError, what+": the POST to "+safeURL(s.endpoint.String())+" failed: "+cause(err), err))
		return
	}
	defer drain(resp.Body)
	switch {
	case resp.StatusCode/100 == 2:
	case resp.StatusCode == http.StatusNotFound:
		s.end(&endReason{what: "the server forgot the HTTP+SSE session (404 for its message endpoint); connect again", cause: sentinel.ErrSessionExpired})
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, httpErrorBody))
		m := fmt.Sprintf("%s: the SSE server's message endpoint answered HTTP %s", what, safetext.Visible(resp.Status))
		if t := bytes.TrimSpace(body); len(t) > 0 {
			m += ": " + safetext.Visible(sample(t))
		}
		s.refused(isRequest, id, what, httpError(jsonrpc.CodeInternalError, m, &HTTPStatusError{StatusCode: resp.StatusCode, Status: resp.Status}))
	}
}

// refused fails a request the server did not take; a notification or an
// answer it did not take is logged.
func (s *sseChannel) refused(isRequest bool, id int64, what string, err error) {
	if isRequest {
		s.peer.Fail(id, err)
		return
	}
	s.logger.Warn("snodo: the SSE server refused a message", "message", what, "error", err)
}

// newRequest builds a request with the caller's headers; body nil is
// the GET of the stream.
func (s *sseChannel) newRequest(ctx context.Context, method string, u *url.URL, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, method, "", nil)
	c := *u
	req.URL, req.Host = &c, c.Host
	req.Header = make(http.Header, len(s.header)+3)
	for k, v := range s.header {
		req.Header[k] = append([]string(nil), v...)
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.Header["Content-Type"] = contentTypeJSON
	} else {
		req.Header["Accept"] = acceptGet
		req.Header["Cache-Control"] = []string{"no-cache"}
	}
	return req
}

// dialFailed reports whether err says the server cannot be reached at
// all (nothing listens, the name does not resolve).
func dialFailed(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns)
}

// Close posts what is queued (for at most closeFlushTimeout), then ends
// the stream (which ends the session) and returns once every request of
// the channel is over.
func (s *sseChannel) Close() error {
	s.mu.Lock()
	s.closing = true
	var flushed chan struct{}
	if s.posting {
		if s.flushed == nil {
			s.flushed = make(chan struct{})
		}
		flushed = s.flushed
	}
	s.mu.Unlock()
	if flushed != nil {
		t := time.NewTimer(closeFlushTimeout)
		select {
		case <-flushed:
		case <-t.C:
		case <-s.ended:
		}
		t.Stop()
	}
	s.end(nil)
	<-s.done
	return nil
}

// end ends the channel with reason (nil: Close) and, on a goroutine of
// its own, waits for the reader and the poster before Done.
func (s *sseChannel) end(reason error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.over = true
		s.mu.Unlock()
		s.reason = reason
		s.cancel()
		close(s.ended)
		go func() {
			s.wg.Wait()
			s.closeIdle()
			close(s.done)
		}()
	})
}

func (s *sseChannel) closeIdle() {
	if s.idle != nil {
		s.idle.CloseIdleConnections()
	}
}

// Done is closed once the stream has ended and no POST runs.
func (s *sseChannel) Done() <-chan struct{} { return s.done }

// Err is why the channel ended on its own; nil when Close ended it.
func (s *sseChannel) Err() error {
	select {
	case <-s.ended:
		return s.reason
	default:
		return nil
	}
}
