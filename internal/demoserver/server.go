package demoserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Options tune the server; the zero value gives the demo's pace.
type Options struct {
	// Tick is the time between two countdown steps. Default 250 ms.
	Tick time.Duration
	// PluginDelay is how long the time plugin takes to load once a client
	// first subscribes to tool changes. Default 500 ms.
	PluginDelay time.Duration
}

// maxLine bounds one incoming message, generous for a demo.
const maxLine = 1 << 20

// noAnswer is what a handler returns when the request must not be
// answered: it was cancelled, or it is an open subscription.
var noAnswer = &rpcError{Code: 0, Message: "no answer"}

// server is one run of Serve. Handlers run on their own goroutines; every
// line written to the client goes through send, under writeMu.
type server struct {
	opts Options

	writeMu sync.Mutex
	out     io.Writer

	mu       sync.Mutex
	inflight map[string]context.CancelFunc // by idKey; cancelled by notifications/cancelled

	running sync.WaitGroup // request handlers
	subs    subscriptions
}

// Serve reads requests from r and writes answers to w until r ends, then
// waits for the requests still running and returns nil. Subscriptions
// still open at that point simply end with the process.
func Serve(r io.Reader, w io.Writer, opts Options) error {
	if opts.Tick <= 0 {
		opts.Tick = 250 * time.Millisecond
	}
	if opts.PluginDelay <= 0 {
		opts.PluginDelay = 500 * time.Millisecond
	}
	s := &server{opts: opts, out: w, inflight: map[string]context.CancelFunc{}}
	s.subs.s = s
	defer s.subs.stop()

	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 64<<10), maxLine)
	for in.Scan() {
		s.receive(in.Bytes())
	}
	s.running.Wait()
	if err := in.Err(); err != nil {
		return fmt.Errorf("demoserver: reading stdin: %w", err)
	}
	return nil
}

// receive handles one line: notifications at once, in order; requests on
// a goroutine each, so a slow tool never holds up the next request.
func (s *server) receive(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil || m.Method == "" {
		s.send(response{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: &rpcError{Code: -32700, Message: "not a JSON-RPC request or notification"}})
		return
	}
	if len(m.ID) == 0 {
		s.notification(&m)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.inflight[idKey(m.ID)] = cancel
	s.mu.Unlock()
	s.running.Go(func() {
		defer s.forget(m.ID)
		result, rpcErr := s.dispatch(ctx, &m)
		switch {
		case rpcErr == noAnswer || ctx.Err() != nil:
			// Cancelled requests get no answer (the cancellation spec).
		case rpcErr != nil:
			s.send(response{JSONRPC: "2.0", ID: m.ID, Error: rpcErr})
		default:
			s.send(response{JSONRPC: "2.0", ID: m.ID, Result: result})
		}
	})
}

// forget drops a finished request from the in-flight table.
func (s *server) forget(id json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel, ok := s.inflight[idKey(id)]; ok {
		cancel()
		delete(s.inflight, idKey(id))
	}
}

// notification handles the one client notification that matters here:
// notifications/cancelled stops a running request or an open subscription.
func (s *server) notification(m *message) {
	if m.Method != "notifications/cancelled" {
		return // nothing else a client sends needs an action
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	s.subs.cancel(p.RequestID)
	s.mu.Lock()
	cancel := s.inflight[idKey(p.RequestID)]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// handlers are the methods the server offers.
var handlers = map[string]func(*server, context.Context, *message, *requestMeta) (any, *rpcError){
	"server/discover":      (*server).discover,
	"tools/list":           (*server).listTools,
	"tools/call":           (*server).callTool,
	"subscriptions/listen": (*server).listen,
}

// dispatch checks the request's protocol version, then runs its handler.
// A modern request names its version in every request: there is no
// session to remember it in.
func (s *server) dispatch(ctx context.Context, m *message) (any, *rpcError) {
	h, ok := handlers[m.Method]
	if !ok {
		msg := "method not found: " + m.Method
		if m.Method == "initialize" || m.Method == "ping" {
			msg += " (this server speaks only MCP " + ProtocolVersion + ", which has neither)"
		}
		return nil, &rpcError{Code: codeMethodNotFound, Message: msg}
	}
	var p struct {
		Meta requestMeta `json:"_meta"`
	}
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &p) != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "params must be a JSON object"}
	}
	switch p.Meta.ProtocolVersion {
	case ProtocolVersion:
	case "":
		return nil, &rpcError{Code: codeInvalidRequest,
			Message: "missing _meta." + metaProtocolVersion + ": this server speaks only MCP " + ProtocolVersion}
	default:
		return nil, &rpcError{Code: codeUnsupportedProtocol, Message: "unsupported protocol version",
			Data: obj{"supported": []string{ProtocolVersion}, "requested": p.Meta.ProtocolVersion}}
	}
	return h(s, ctx, m, &p.Meta)
}

// send writes one message as one line. A client that went away makes the
// write fail; the server then just finishes reading to EOF.
func (s *server) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demoserver: cannot marshal %T: %v", v, err)) // a bug in this package
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, _ = s.out.Write(append(b, '\n'))
}

// notify sends a notification about the request ctx belongs to: on its
// own response stream over HTTP (http.go), else on stdout.
func (s *server) notify(ctx context.Context, method string, params any) {
	s.sender(ctx)(notification{JSONRPC: "2.0", Method: method, Params: params})
}

// streamKey carries, in a request's context, the stream its messages go
// to when the server is served over HTTP.
type streamKey struct{}

// sender is where the messages about the request ctx belongs to go.
func (s *server) sender(ctx context.Context) func(any) {
	if send, ok := ctx.Value(streamKey{}).(func(any)); ok {
		return send
	}
	return s.send
}

// serverInfo names this server, in discover's result and its _meta.
var serverInfo = obj{"name": "snodo-demo", "title": "snodo demo server", "version": "1.0.0"}

// discover tells the client what the server is and what it offers. It
// replaces the legacy initialize handshake: nothing is negotiated, so the
// client may send it again at any time.
func (s *server) discover(context.Context, *message, *requestMeta) (any, *rpcError) {
	return obj{
		"resultType":        "complete",
		"supportedVersions": []string{ProtocolVersion},
		"capabilities":      obj{"tools": obj{"listChanged": true}},
		"serverInfo":        serverInfo,
		"instructions":      "A demo: count down with progress, greet the user by name, watch the tool list change.",
		"ttlMs":             0,
		"cacheScope":        "public",
		"_meta":             obj{metaServerInfo: serverInfo},
	}, nil
}
