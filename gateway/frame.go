package gateway

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// The server side of Streamable HTTP framing: how one POST's answer goes
// back (a single JSON object, or an SSE stream carrying notifications and
// server requests before the response), how a GET stream carries a
// session's messages, and the HTTP statuses errors map to. Nothing here
// knows about snodo.Session: it is the part a server-side transport would
// keep.

// Header names of Streamable HTTP.
const (
	hdrSessionID       = "Mcp-Session-Id"
	hdrProtocolVersion = "Mcp-Protocol-Version"
	hdrMethod          = "Mcp-Method"
	hdrName            = "Mcp-Name"
	hdrParamPrefix     = "Mcp-Param-"
)

// MCP error codes the gateway itself answers with.
const (
	codeHeaderMismatch     = -32020
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// errBodyTooLarge marks a body past the limit (413).
var errBodyTooLarge = errors.New("gateway: request body too large")

// bodyReadTimeout bounds the reading of a POST body, so that a client
// sending it byte by byte cannot hold a connection (the header read has
// NewServer's ReadHeaderTimeout). Streams written afterwards are not
// bounded by it.
const bodyReadTimeout = 30 * time.Second

// readBody reads r's body, at most limit bytes (past it errBodyTooLarge)
// and within bodyReadTimeout; the read deadline is lifted afterwards, so
// that the answer stream may last.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) // not every ResponseWriter can; then none
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	if n := r.ContentLength; n >= 0 && n <= limit {
		// The common case: one buffer of the announced size (ReadAll
		// would grow one from 512 bytes, LimitReader allocate a reader).
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	if r.ContentLength > limit {
		return nil, errBodyTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// statusOf is the HTTP status an error answer to a request goes back
// with: the modern era's transport maps a few codes onto 4xx statuses; a
// legacy answer is always 200 (the error is in the body).
func statusOf(code int, modern bool) int {
	if !modern {
		return http.StatusOK
	}
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case codeHeaderMismatch, codeMissingCapability, codeUnsupportedVersion, jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeJSONError answers a POST with a JSON-RPC error (id nil: null) at
// status.
func writeJSONError(w http.ResponseWriter, status int, id []byte, code int, msg string, data []byte) {
	line := jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: code, Message: msg, Data: data})
	writeJSON(w, status, line)
}

// writeJSON answers a POST with one JSON message (a line from jsonrpc's
// encoders: its trailing newline is kept, which JSON allows).
func writeJSON(w http.ResponseWriter, status int, line []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(line)))
	w.WriteHeader(status)
	_, _ = w.Write(line)
}

// stream is one POST's answer or one GET stream as it is written: it
// starts as nothing, becomes an SSE stream at the first message that is
// not the final response (progress, a log, a server request), and ends
// with the response, or with the request itself. Its methods are safe
// for concurrent use; messages go out in the order they are sent.
type stream struct {
	mu       sync.Mutex
	w        http.ResponseWriter
	flusher  http.Flusher
	sse      bool // headers written as text/event-stream
	done     bool // the final response went out (or the request ended)
	header   func(http.Header)
	eventBuf []byte
}

func newStream(w http.ResponseWriter, header func(http.Header)) *stream {
	f, _ := w.(http.Flusher)
	return &stream{w: w, flusher: f, header: header}
}

// startSSE writes the SSE headers once. Called with mu held.
func (s *stream) startSSE() {
	if s.sse {
		return
	}
	s.sse = true
	h := s.w.Header()
	if s.header != nil {
		s.header(h)
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// event writes one message (one JSON line) as an SSE event, turning the
// answer into a stream if it is not one yet. It reports false once the
// stream has ended or the write failed (the client went away).
func (s *stream) event(line []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.startSSE()
	return s.writeEvent(line)
}

func (s *stream) writeEvent(line []byte) bool {
	b := append(s.eventBuf[:0], "event: message\ndata: "...)
	b = append(b, bytes.TrimRight(line, "\n")...)
	b = append(b, "\n\n"...)
	s.eventBuf = b
	if _, err := s.w.Write(b); err != nil {
		s.done = true
		return false
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return true
}

// comment writes an SSE comment (a keep-alive) on a stream already open.
func (s *stream) comment() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || !s.sse {
		return !s.done
	}
	if _, err := s.w.Write([]byte(":\n\n")); err != nil {
		s.done = true
		return false
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return true
}

// final writes the response that ends the request: as the stream's last
// event once it is one, else as a plain JSON body at status. Later
// messages are dropped.
func (s *stream) final(status int, line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if s.sse {
		s.writeEvent(line)
		return
	}
	if s.header != nil {
		s.header(s.w.Header())
	}
	writeJSON(s.w, status, line)
}

// open makes the answer an SSE stream now (a GET stream, a listen).
func (s *stream) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.startSSE()
		if s.flusher != nil {
			s.flusher.Flush()
		}
	}
}

// end marks the stream ended without a response (the handler returns).
func (s *stream) end() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}
