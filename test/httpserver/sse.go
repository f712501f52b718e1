package httpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// SSE is a server of the HTTP+SSE transport of protocol version
// 2024-11-05, with named misbehaviours, for the tests of snodo's
// fallback to it: GET /sse opens the stream, whose first event,
// endpoint, names /message?sessionId=…; every POST there is answered
// 202 and its answer goes on the stream as a message event. Any other
// request (a POST to /sse, as a Streamable HTTP client sends first) is
// answered 405. It serves initialize (legacy only), tools/list and
// tools/call of an echo tool. It is an http.Handler.
type SSE struct {
	// Misbehave names what the stream does instead (see SSEMisbehaviours);
	// "" serves.
	Misbehave string
	// Foreign is the endpoint "foreign-endpoint" names (default
	// http://elsewhere.invalid/message).
	Foreign string

	mu       sync.Mutex
	sessions map[string]chan string // each stream's messages to send
	streams  atomic.Int64           // GETs of the stream
	posts    atomic.Int64           // POSTs to a live session
}

// SSEMisbehaviours lists what SSE.Misbehave may name:
//
//	foreign-endpoint  the endpoint event names a URL on another origin
//	no-endpoint       the first event is a message, not endpoint
//	silent            the stream sends only keep-alive comments
var SSEMisbehaviours = []string{"foreign-endpoint", "no-endpoint", "silent"}

// Streams counts the GETs of the stream.
func (h *SSE) Streams() int64 { return h.streams.Load() }

// Posts counts the messages posted to a live session.
func (h *SSE) Posts() int64 { return h.posts.Load() }

// EndStreams ends every open stream and forgets its session, as a server
// that stops does.
func (h *SSE) EndStreams() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, ch := range h.sessions {
		close(ch)
		delete(h.sessions, id)
	}
}

func (h *SSE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/sse":
		h.stream(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/message":
		h.message(w, r)
	default:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// stream serves one GET of the stream.
func (h *SSE) stream(w http.ResponseWriter, r *http.Request) {
	h.streams.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	switch h.Misbehave {
	case "foreign-endpoint":
		endpoint := h.Foreign
		if endpoint == "" {
			endpoint = "http://elsewhere.invalid/message"
		}
		fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoint)
		keepAlive(w, r, nil)
		return
	case "no-endpoint":
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		keepAlive(w, r, nil)
		return
	case "silent":
		keepAlive(w, r, nil)
		return
	}
	id := newSessionID()
	out := make(chan string, 64)
	h.mu.Lock()
	if h.sessions == nil {
		h.sessions = map[string]chan string{}
	}
	h.sessions[id] = out
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if h.sessions[id] == out {
			delete(h.sessions, id)
		}
		h.mu.Unlock()
	}()
	fmt.Fprintf(w, "event: endpoint\ndata: /message?sessionId=%s\n\n", id)
	if f != nil {
		f.Flush()
	}
	for {
		select {
		case msg, ok := <-out:
			if !ok {
				return // EndStreams
			}
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
			if f != nil {
				f.Flush()
			}
		case <-r.Context().Done():
			return
		}
	}
}

// message takes one POSTed message and queues its answer on the stream.
func (h *SSE) message(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	out := h.sessions[r.URL.Query().Get("sessionId")]
	h.mu.Unlock()
	if out == nil {
		http.Error(w, "Could not find session", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var m httpMessage
	if json.Unmarshal(body, &m) != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	h.posts.Add(1)
	var reply string
	switch {
	case m.ID == nil: // a notification or an answer
	case m.Method == "initialize":
		reply = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"snodo-sse-testserver","version":"1.0.0"}}`
	case m.Method == "tools/list":
		reply = `{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}`
	case m.Method == "tools/call":
		var p struct {
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		text, _ := json.Marshal(p.Arguments.Text)
		reply = `{"content":[{"type":"text","text":` + string(text) + `}]}`
	default:
		msg, _ := json.Marshal("method not found: " + m.Method)
		reply = "error:" + string(msg)
	}
	w.WriteHeader(http.StatusAccepted)
	if m.ID == nil {
		return
	}
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, reply)
	if rest, ok := strings.CutPrefix(reply, "error:"); ok {
		line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":%s}}`, m.ID, rest)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[r.URL.Query().Get("sessionId")] == out { // not ended meanwhile
		select {
		case out <- line:
		default: // a client that does not read its stream loses answers
		}
	}
}
