// Package httpserver is a small MCP server on Streamable HTTP, in both
// eras, with named misbehaviours, for the tests of snodo's HTTP
// transport. It is apart from package testserver so that the stdio test
// server's binary does not link net/http (its start-up time is part of
// some timing tests).
package httpserver

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP is the server on Streamable HTTP, for the tests of snodo's
// HTTP transport: discover (modern) or initialize with a session
// (legacy), tools/list and tools/call of an echo tool, and one named
// misbehaviour on tools/call. It is an http.Handler: serve it with
// httptest or net/http.
type HTTP struct {
	// Era is "modern" (stateless; server/discover) or "legacy"
	// (initialize, Mcp-Session-Id, the GET stream; server/discover is
	// refused with 400 as a legacy server does).
	Era string
	// Misbehave names what tools/call does instead of answering (see
	// HTTPMisbehaviours); "" answers.
	Misbehave string
	// OnConnect makes server/discover and initialize misbehave instead
	// of tools/call, so that the client cannot even connect.
	OnConnect bool
	// MaxEvent is the size of the event "oversized" sends (default 1 MiB).
	MaxEvent int
	// ForgottenStatus is the status of a request that names a session
	// the server does not know (legacy): 404 (the default), or 400 with
	// "Bad Request: No valid session ID provided", as some servers
	// answer after a restart.
	ForgottenStatus int
	// RedirectTo is where "redirect-away" sends tools/call, and
	// RedirectCode with which status (default 307).
	RedirectTo   string
	RedirectCode int
	// SessionID, when set, is the Mcp-Session-Id every initialize gets
	// (legacy), whatever it holds.
	SessionID string

	mu       sync.Mutex
	sessions map[string]bool
	calls    atomic.Int64 // tools/call requests received
	deletes  atomic.Int64 // DELETEs of a live session
	aborted  atomic.Int64 // "never-ending" and "silent" requests the client closed
	cancels  atomic.Int64 // notifications/cancelled posted
	opened   atomic.Int64 // sessions opened
	gets     atomic.Int64 // GET requests
	resumes  atomic.Int64 // GET requests with Last-Event-ID
	written  atomic.Int64 // bytes "endless-line" wrote
}

// HTTPMisbehaviours lists what HTTP.Misbehave may name:
//
//	garbage        200 application/json with a body that is no JSON
//	garbage-sse    200 text/event-stream: an event that is no JSON, then the end
//	never-ending   an SSE stream of keep-alive comments that never answers
//	silent         no answer at all (not even a status) until the client
//	               closes the request
//	5xx            500 with a plain-text body
//	429            429 with Retry-After: 1 twice, then the answer
//	429-forever    429 with Retry-After: 1 every time
//	redirect-loop  307 to the endpoint itself, every time
//	expire         the session is forgotten: 404 (legacy)
//	oversized      an SSE event of MaxEvent bytes before the answer
//	redirect-away  RedirectCode to RedirectTo (another origin)
//	retry-after-long  503 with Retry-After: 3600
//	escapes        502 whose body and reason phrase hold terminal escapes,
//	               a newline, BEL, CR, C1 and invalid UTF-8
//	html           200 text/html: a web page
//	html-404       404 text/html: a web framework's error page
//	old-sse        200 text/event-stream: an old HTTP+SSE server's
//	               endpoint event, then keep-alives for ever
//	accepted       202 with no answer, as an old HTTP+SSE message URL does
//	endless-line   an SSE "data:" line that never ends (up to 1 GiB)
//	cr-id          the answer's SSE event id ends with a lone CR
//	resume-overflow  an SSE stream with an id and "retry:" of 20 digits,
//	               then the end, and no answer: the client resumes (legacy)
//
// and what the GET stream (legacy) does instead of staying open:
//
//	listen-retry-0      "retry: 0" and the end, then 503 every time
//	listen-event-retry-1  "retry: 1", an event with an id, and the end,
//	                    every time
var HTTPMisbehaviours = []string{"garbage", "garbage-sse", "never-ending", "silent", "5xx", "429", "429-forever", "redirect-loop", "expire", "oversized",
	"redirect-away", "retry-after-long", "escapes", "html", "html-404", "old-sse", "accepted", "endless-line", "cr-id", "resume-overflow",
	"listen-retry-0", "listen-event-retry-1"}

// Cancels counts the notifications/cancelled the client posted.
func (h *HTTP) Cancels() int64 { return h.cancels.Load() }

// Gets counts the GET requests (the listen stream, resumptions).
func (h *HTTP) Gets() int64 { return h.gets.Load() }

// Resumes counts the GET requests that resume a stream (Last-Event-ID).
func (h *HTTP) Resumes() int64 { return h.resumes.Load() }

// Written counts the bytes "endless-line" wrote before the client went
// away.
func (h *HTTP) Written() int64 { return h.written.Load() }

// Expire forgets every session, as a server restarted does: the next
// request of a session is answered 404.
func (h *HTTP) Expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.sessions)
}

// Sessions counts the sessions the server has opened (initialize).
func (h *HTTP) Sessions() int64 { return h.opened.Load() }

// Calls counts the tools/call requests received.
func (h *HTTP) Calls() int64 { return h.calls.Load() }

// Deletes counts the DELETEs that ended a live session.
func (h *HTTP) Deletes() int64 { return h.deletes.Load() }

// Aborted counts the never-ending streams the client closed.
func (h *HTTP) Aborted() int64 { return h.aborted.Load() }

type httpMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	legacy := h.Era == "legacy"
	switch r.Method {
	case http.MethodGet:
		n := h.gets.Add(1)
		if r.Header.Get("Last-Event-ID") != "" {
			h.resumes.Add(1)
		}
		if !legacy || !h.live(r.Header.Get("Mcp-Session-Id")) {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch {
		case h.Misbehave == "listen-retry-0" && n > 1:
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		case h.Misbehave == "listen-retry-0":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "retry: 0\n\n")
			return
		case h.Misbehave == "listen-event-retry-1":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "retry: 1\nid: %d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hi\"}}\n\n", n)
			return
		case r.Header.Get("Last-Event-ID") != "" && h.Misbehave == "resume-overflow":
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		keepAlive(w, r, nil)
		return
	case http.MethodDelete:
		h.mu.Lock()
		sid := r.Header.Get("Mcp-Session-Id")
		if h.sessions[sid] {
			delete(h.sessions, sid)
			h.deletes.Add(1)
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var m httpMessage
	if json.Unmarshal(body, &m) != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	if legacy && m.Method != "initialize" && !h.live(r.Header.Get("Mcp-Session-Id")) {
		if r.Header.Get("Mcp-Session-Id") != "" {
			if h.ForgottenStatus == http.StatusBadRequest {
				http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
				return
			}
			http.Error(w, "no such session", http.StatusNotFound)
		} else {
			http.Error(w, "Bad Request: no session", http.StatusBadRequest)
		}
		return
	}
	if m.ID == nil { // a notification or an answer
		if m.Method == "notifications/cancelled" {
			h.cancels.Add(1)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if h.OnConnect && h.Misbehave != "" && (m.Method == "server/discover" || m.Method == "initialize") {
		h.misbehave(w, r, m, `{}`)
		return
	}
	switch m.Method {
	case "server/discover":
		if legacy {
			http.Error(w, "Bad Request: no session", http.StatusBadRequest)
			return
		}
		answer(w, m.ID, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"snodo-http-testserver","version":"1.0.0"}}`)
	case "initialize":
		if !legacy {
			answerError(w, m.ID, -32601, "initialize: this server is modern")
			return
		}
		sid := h.SessionID
		if sid == "" {
			sid = newSessionID()
		}
		h.mu.Lock()
		if h.sessions == nil {
			h.sessions = map[string]bool{}
		}
		h.sessions[sid] = true
		h.mu.Unlock()
		h.opened.Add(1)
		w.Header().Set("Mcp-Session-Id", sid)
		answer(w, m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"snodo-http-testserver","version":"1.0.0"}}`)
	case "tools/list":
		answer(w, m.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}`)
	case "tools/call":
		h.calls.Add(1)
		h.call(w, r, m)
	default:
		answerError(w, m.ID, -32601, "method not found: "+m.Method)
	}
}

// call answers tools/call, or misbehaves.
func (h *HTTP) call(w http.ResponseWriter, r *http.Request, m httpMessage) {
	var p struct {
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	text, _ := json.Marshal(p.Arguments.Text)
	h.misbehave(w, r, m, `{"content":[{"type":"text","text":`+string(text)+`}]}`)
}

// misbehave answers m with result, or misbehaves.
func (h *HTTP) misbehave(w http.ResponseWriter, r *http.Request, m httpMessage, result string) {
	switch h.Misbehave {
	case "garbage":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "<html>this is not JSON{")
	case "garbage-sse":
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: <html>this is not JSON{\n\n")
	case "never-ending":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		keepAlive(w, r, &h.aborted)
	case "silent":
		<-r.Context().Done()
		h.aborted.Add(1)
	case "5xx":
		http.Error(w, "upstream exploded", http.StatusInternalServerError)
	case "429", "429-forever":
		if h.Misbehave == "429-forever" || h.calls.Load()%3 != 0 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		answer(w, m.ID, result)
	case "redirect-loop":
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	case "redirect-away":
		code := h.RedirectCode
		if code == 0 {
			code = http.StatusTemporaryRedirect
		}
		http.Redirect(w, r, h.RedirectTo, code)
	case "retry-after-long":
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	case "escapes":
		if hj, ok := w.(http.Hijacker); ok {
			conn, buf, err := hj.Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			body := "boom\x1b[2J\x1b]0;pwned\x07\r\nforged: line\u009b31m\xff\xfe"
			fmt.Fprintf(buf, "HTTP/1.1 502 Bad\x1b[31mGateway\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			_ = buf.Flush()
		}
	case "html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body><h1>Welcome</h1></body></html>")
	case "html-404":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "<!DOCTYPE html>\n<html><body><pre>Cannot POST "+r.URL.Path+"</pre></body></html>\n")
	case "old-sse":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: endpoint\ndata: /message?sessionId=0123\n\n")
		keepAlive(w, r, &h.aborted)
	case "accepted":
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "Accepted")
	case "endless-line":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		chunk := []byte("data: " + strings.Repeat("x", 64<<10))
		for h.written.Load() < 1<<30 {
			n, err := w.Write(chunk)
			h.written.Add(int64(n))
			if err != nil {
				return
			}
			chunk = chunk[len(chunk)-64<<10:] // "data: " once only
		}
	case "cr-id":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: 1\rdata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", m.ID, result)
	case "resume-overflow":
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 1\nretry: 99999999999999999999\ndata: \n\n")
	case "expire":
		h.mu.Lock()
		clear(h.sessions)
		h.mu.Unlock()
		http.Error(w, "no such session", http.StatusNotFound)
	case "oversized":
		max := h.MaxEvent
		if max == 0 {
			max = 1 << 20
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"%s\"}}\n\n", strings.Repeat("x", max))
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", m.ID, result)
	default:
		answer(w, m.ID, result)
	}
}

// live reports whether sid names a session of the server.
func (h *HTTP) live(sid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return sid != "" && h.sessions[sid]
}

// keepAlive sends SSE comments until the client goes away.
func keepAlive(w http.ResponseWriter, r *http.Request, aborted *atomic.Int64) {
	f, _ := w.(http.Flusher)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := io.WriteString(w, ":\n\n"); err != nil {
			break
		}
		if f != nil {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
			if aborted != nil {
				aborted.Add(1)
			}
			return
		case <-t.C:
		}
	}
}

func answer(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

func answerError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	m, _ := json.Marshal(msg)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, m)
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
