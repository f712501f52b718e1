package demoserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// HTTP is the same server on Streamable HTTP, modern era: every request
// is a POST of its own, with no session. The answer is a JSON body, or an
// SSE stream (text/event-stream) when messages about the request come
// before it: countdown's progress, a subscription's events. A client
// cancels by closing the stream. `snodo demo` serves it on a local port.
//
//	client                                   demo server
//	  POST server/discover ────────────────►  200 application/json: the result
//	  POST tools/call countdown ───────────►  200 text/event-stream:
//	                                          progress ×N, then the result
//	  POST subscriptions/listen ───────────►  200 text/event-stream: the
//	                                          acknowledgement, events … until
//	  (the client closes the stream) ──────►  the subscription ends
//
// Close stops it: the plugin timer and every open stream.
type HTTP struct {
	s      *server
	ctx    context.Context // done once Close is called: ends every stream
	cancel context.CancelFunc
}

// NewHTTP returns the server as an http.Handler; the zero Options give
// the demo's pace.
func NewHTTP(opts Options) *HTTP {
	if opts.Tick <= 0 {
		opts.Tick = 250 * time.Millisecond
	}
	if opts.PluginDelay <= 0 {
		opts.PluginDelay = 500 * time.Millisecond
	}
	s := &server{opts: opts, out: io.Discard, inflight: map[string]context.CancelFunc{}}
	s.subs.s = s
	h := &HTTP{s: s}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// Close ends the open streams and stops the plugin timer.
func (h *HTTP) Close() {
	h.cancel()
	h.s.subs.stop()
}

// ServeHTTP answers one POST: a request, or a notification (202).
func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// No session, so no GET stream to open and nothing to DELETE.
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "this server takes POST only", http.StatusMethodNotAllowed)
		return
	}
	var m message
	if err := json.NewDecoder(io.LimitReader(r.Body, maxLine)).Decode(&m); err != nil || m.Method == "" {
		http.Error(w, "the body is not a JSON-RPC request or notification", http.StatusBadRequest)
		return
	}
	if len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification: nothing to answer
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	st := &sseStream{w: w}
	defer st.end()
	ctx = context.WithValue(ctx, streamKey{}, st.send)

	result, rpcErr := h.s.dispatch(ctx, &m)
	switch {
	case rpcErr == noAnswer && m.Method == "subscriptions/listen":
		<-ctx.Done() // the stream stays open until the client closes it
	case rpcErr == noAnswer || ctx.Err() != nil:
		// Cancelled: the client has gone.
	case rpcErr != nil:
		st.answer(response{JSONRPC: "2.0", ID: m.ID, Error: rpcErr})
	default:
		st.answer(response{JSONRPC: "2.0", ID: m.ID, Result: result})
	}
}

// sseStream is one POST's response: plain JSON when the answer is all
// there is, an SSE stream from the first message that comes before it.
// Messages may come from other goroutines (the plugin's events); after
// the end they are dropped.
type sseStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	sse     bool
	written bool
}

// send writes a message that comes before the answer, as an SSE event.
func (st *sseStream) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demoserver: cannot marshal %T: %v", v, err)) // a bug in this package
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.written {
		return
	}
	if !st.sse {
		st.sse = true
		st.w.Header().Set("Content-Type", "text/event-stream")
		st.w.Header().Set("Cache-Control", "no-cache")
		st.w.WriteHeader(http.StatusOK)
	}
	fmt.Fprintf(st.w, "data: %s\n\n", b)
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

// answer writes the answer: the last event of the stream, or the body.
func (st *sseStream) answer(v any) {
	st.mu.Lock()
	sse := st.sse
	if !sse {
		st.written = true
		st.w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(v)
		_, _ = st.w.Write(b)
	}
	st.mu.Unlock()
	if sse {
		st.send(v)
	}
	st.end()
}

// end drops whatever comes after: the handler is returning.
func (st *sseStream) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.written = true
}
