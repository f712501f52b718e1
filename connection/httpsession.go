package connection

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// A legacy Streamable HTTP session that the server forgets (it
// restarted, or expired the session) is renewed, as the transport's spec
// asks of a client: a 404 for the session's Mcp-Session-Id, or a 400
// that names a missing or invalid session on a connection that had one
// (what some servers answer after a restart), starts a new session with
// the initialize and notifications/initialized the connection sent
// first, then re-sends the resources/subscribe requests that were taken,
// and the request that met the expiry is sent again (the server never
// took it). A second expiry in a row for the same request, or a renewal
// that fails, ends the connection with ErrSessionExpired.

// httpRenewTimeout bounds one renewal (its initialize, initialized and
// re-subscriptions together).
const httpRenewTimeout = 10 * time.Second

// sessionState is what a renewal replays: the legacy handshake and the
// resources the server was asked to watch. Guarded by httpPeer.mu.
type sessionState struct {
	initBody, initializedBody []byte
	initHeader                http.Header
	subscribed                map[string][]byte // resources/subscribe bodies by uri
	renewals                  int               // sessions started again
}

// sessionGone reports whether resp, the answer to req, says the server
// no longer knows req's session: 404, or a 400 whose body names a
// session, for a request that carried one. body is the start of resp's
// body, read by the caller for a 400 (nil otherwise).
func sessionGone(req *http.Request, resp *http.Response, body []byte) bool {
	if req.Header.Get(headerSession) == "" {
		return false
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return true
	case http.StatusBadRequest:
		return bytes.Contains(bytes.ToLower(body), []byte("session"))
	}
	return false
}

// readGoneBody reads the start of a 400's body (for sessionGone) and
// gives resp a body that still reads it all, for whoever reports the
// status.
func readGoneBody(resp *http.Response) []byte {
	if resp.StatusCode != http.StatusBadRequest {
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return head
}

// remember records what a renewal replays, once a message went through:
// the legacy handshake, and subscriptions taken or given up.
func (p *httpPeer) remember(method string, body []byte, h http.Header) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch method {
	case "initialize":
		p.sess.initBody, p.sess.initHeader = body, h
	case "notifications/initialized":
		p.sess.initializedBody = body
	case "resources/subscribe", "resources/unsubscribe":
		env, err := jsonrpc.Scan(body)
		if err != nil {
			return
		}
		uri, _ := jsonrpc.Member(env.Params, "uri")
		if len(uri) == 0 {
			return
		}
		if method == "resources/unsubscribe" {
			delete(p.sess.subscribed, string(uri))
			return
		}
		if p.sess.subscribed == nil {
			p.sess.subscribed = map[string][]byte{}
		}
		p.sess.subscribed[string(uri)] = body
	}
}

// renew starts a new session in place of old and reports whether the
// connection has a live session again (another renewal may have done
// it already). It never ends the peer: a caller that gets false does.
func (p *httpPeer) renew(old string) bool {
	p.renewMu.Lock()
	defer p.renewMu.Unlock()
	p.mu.Lock()
	current, st := p.session, p.sess
	subs := make([][]byte, 0, len(st.subscribed))
	for _, b := range st.subscribed {
		subs = append(subs, b)
	}
	if current == old && st.initBody != nil {
		p.session, p.sessionValue = "", nil // the new initialize carries none
		p.renewing = make(chan struct{})
	}
	p.mu.Unlock()
	if current != old {
		return current != "" // renewed meanwhile
	}
	if st.initBody == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(p.ctx, httpRenewTimeout)
	defer cancel()
	err := p.handshake(ctx, st, subs)
	p.mu.Lock()
	close(p.renewing) // the requests that waited go, with the new session or none
	p.renewing = nil
	p.mu.Unlock()
	if err != nil {
		p.logger.Warn("snodo: could not start a new HTTP session after the server forgot the last one", "error", err)
		return false
	}
	p.mu.Lock()
	p.sess.renewals++
	n := p.sess.renewals
	p.mu.Unlock()
	p.logger.Info("snodo: the server forgot the HTTP session; started a new one", "renewals", n, "resubscriptions", len(subs))
	return true
}

// handshake posts the initialize, takes the new session's ID, posts
// notifications/initialized and re-sends the subscriptions.
func (p *httpPeer) handshake(ctx context.Context, st sessionState, subs [][]byte) error {
	if err := p.exchangeOnce(ctx, st.initBody, st.initHeader, true); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if st.initializedBody != nil {
		if err := p.exchangeOnce(ctx, st.initializedBody, nil, false); err != nil {
			return fmt.Errorf("notifications/initialized: %w", err)
		}
	}
	for _, b := range subs {
		if err := p.exchangeOnce(ctx, b, nil, false); err != nil {
			return fmt.Errorf("resources/subscribe: %w", err)
		}
	}
	return nil
}

// exchangeOnce posts body for the renewal and reads its answer to the
// end (a request's result is the transport's own, never delivered);
// takeSession keeps the Mcp-Session-Id the answer gives.
func (p *httpPeer) exchangeOnce(ctx context.Context, body []byte, h http.Header, takeSession bool) error {
	resp, err := p.do(p.buildRequest(ctx, http.MethodPost, body, h, false, true))
	if err != nil {
		return errors.New(cause(err))
	}
	defer drain(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	if takeSession {
		sid := resp.Header.Get(headerSession)
		if sid == "" {
			return errors.New("the answer gave no Mcp-Session-Id")
		}
		if err := checkSessionID(sid); err != nil {
			return err
		}
		p.mu.Lock()
		p.session, p.sessionValue = sid, []string{sid}
		p.mu.Unlock()
	}
	if resp.StatusCode == http.StatusAccepted || !strings.HasPrefix(mediaType(resp.Header), "text/event-stream") {
		return nil
	}
	// An SSE answer: read until its response (or the end).
	lastID, retry := "", httpDefaultRetry
	var failed error
	_, err = p.readSSE(resp.Body, func(msg []byte) {
		if env, e := jsonrpc.Scan(msg); e == nil && env.Kind == jsonrpc.KindResponse && env.Error != nil {
			failed = fmt.Errorf("the server answered with an error: %s", sample(env.Error))
		}
	}, &lastID, &retry)
	if failed != nil {
		return failed
	}
	return err
}
