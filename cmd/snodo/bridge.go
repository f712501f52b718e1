package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/remote"
)

// `snodo bridge --nats URL --server NAME` is a stdio MCP server that
// forwards its client's requests to a name served over NATS, so that any
// MCP host can use a served name as a plain command of its mcpServers
// file.
//
//	MCP host ──stdio──▶ bridge ──remote.Client──▶ NATS ──▶ a host of NAME ──▶ MCP server
//
// Toward its client it speaks both eras. A modern client's requests,
// server/discover included, carry their _meta and are forwarded as they
// came, and their results come back raw (input_required included: the
// client completes the rounds). A legacy client's initialize and ping are
// answered here, its other requests forwarded, and the input rounds of a
// modern served server completed for it, each input request sent to it as
// a request of its era. Every result is written back under the client's
// id.

// Bounds of the bridge.
const (
	// bridgeMaxInFlight bounds the client's requests forwarded at once;
	// one over it is answered at once with a -32000 saying so (the reader
	// never blocks, so the client's answers to server requests still
	// get through).
	bridgeMaxInFlight = 256
	// bridgeInfoWait bounds the look-up of the served server's info that
	// answers initialize.
	bridgeInfoWait = 10 * time.Second
	// bridgeDrain bounds the wait for the forwarded requests to end once
	// the client closed stdin or a signal came.
	bridgeDrain = 5 * time.Second
)

// runBridge runs the bridge until its stdin ends or a signal comes.
func runBridge(cfg *config, sio stdio) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client that goes away must not kill the bridge with SIGPIPE before
	// it cancelled what it forwarded: writes fail with EPIPE instead, which
	// ends the run (exit status 141).
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	log := slog.New(slog.NewTextHandler(sio.err, &slog.HandlerOptions{Level: bridgeLogLevel(cfg)}))
	opts := []remote.ClientOption{
		remote.WithNATSOptions(natsOptions(cfg)...),
		remote.WithTimeout(cfg.timeout),
		remote.WithLogger(log),
	}
	if cfg.prefix != "" {
		opts = append(opts, remote.WithPrefix(cfg.prefix))
	}
	b := newBridge(sio.out, cfg.serverName, log)
	opts = append(opts, remote.WithServerRequestHandler(b.serverRequest))
	c, err := remote.Dial(ctx, cfg.natsURL, cfg.serverName, opts...)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(sio.err, "snodo bridge: interrupted while connecting to NATS")
			return exitInterrupted
		}
		return (&session{cfg: cfg, io: sio}).exitCode(ctx, err) // says what to check, as the other commands do
	}
	defer c.Close()
	b.c = c
	log.Info("snodo bridge: forwarding stdio to a served name", "server", cfg.serverName)
	err = b.serve(ctx, sio.in)
	if b.outGone() {
		return exitBrokenPipe
	}
	if err != nil {
		fmt.Fprintf(sio.err, "snodo bridge: %v\n", err)
		return exitFailure
	}
	return exitOK
}

func bridgeLogLevel(cfg *config) slog.Level {
	if cfg.verbose {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// bridge is one run: the client on stdio, the served name behind c.
type bridge struct {
	c    *remote.Client
	name string
	log  *slog.Logger

	outMu sync.Mutex
	out   io.Writer
	wrote error              // the first failed write: stdout's reader went away
	gone  context.CancelFunc // ends serve once a write failed

	slots chan struct{} // one per forwarded request, bridgeMaxInFlight
	wg    sync.WaitGroup

	caps atomic.Pointer[snodo.ClientCapabilities] // a legacy client's, from its initialize

	mu       sync.Mutex
	inFlight map[string]context.CancelFunc // by the client's id, as it wrote it
	asked    map[int64]chan jsonrpc.Envelope
	nextID   atomic.Int64
}

func newBridge(out io.Writer, name string, log *slog.Logger) *bridge {
	return &bridge{
		out: out, name: name, log: log,
		slots:    make(chan struct{}, bridgeMaxInFlight),
		inFlight: map[string]context.CancelFunc{},
		asked:    map[int64]chan jsonrpc.Envelope{},
	}
}

// serve reads the client's messages until in ends or ctx is done, then
// cancels what is still forwarded and waits for it (at most bridgeDrain).
func (b *bridge) serve(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.outMu.Lock()
	b.gone = cancel
	b.outMu.Unlock()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r, connection.DefaultMaxLineBytes)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				readErr <- nil
				return
			}
		}
	}()
	var err error
loop:
	for {
		select {
		case line := <-lines:
			b.dispatch(ctx, line)
		case err = <-readErr:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	// At the end of stdin the requests in flight may end (a client that
	// sent its last request and closed gets its answer) within
	// bridgeDrain; a signal or a lost stdout cancels them at once.
	t := time.NewTimer(bridgeDrain)
	defer t.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-t.C:
	}
	cancel()
	t.Reset(bridgeDrain)
	select {
	case <-done:
	case <-t.C:
		b.log.Warn("snodo bridge: requests still forwarded after their cancel; leaving them", "after", bridgeDrain)
	}
	return err
}

// readLine reads one line (without its line break) of at most max bytes.
// A longer line is read to its end and skipped, logged by the caller as
// a parse error.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		frag, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, nil
			}
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0 && errors.Is(err, io.EOF):
			return bytes.TrimRight(line, "\r\n"), nil
		default:
			return nil, err
		}
	}
}

// dispatch handles one line of the client's. It never blocks on the
// served name: requests run on goroutines of their own.
func (b *bridge) dispatch(ctx context.Context, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		if line == nil {
			b.writeError(nil, &snodo.Error{Code: jsonrpc.CodeParseError, Message: fmt.Sprintf("message longer than %d bytes: skipped", connection.DefaultMaxLineBytes)})
		}
		return
	}
	env, err := jsonrpc.Scan(line)
	if err != nil {
		b.writeError(nil, &snodo.Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()})
		return
	}
	switch env.Kind {
	case jsonrpc.KindResponse:
		b.answered(env)
	case jsonrpc.KindNotification:
		b.notified(env)
	case jsonrpc.KindRequest:
		b.request(ctx, env)
	default:
		b.writeError(env.ID, &snodo.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: not a JSON-RPC 2.0 request, notification or response"})
	}
}

// notified handles a notification of the client's: a cancel cancels the
// forwarded request; the others concern the bridge's own session.
func (b *bridge) notified(env jsonrpc.Envelope) {
	switch env.MethodName() {
	case "notifications/cancelled":
		id, err := jsonrpc.Member(env.Params, "requestId")
		if err != nil || len(id) == 0 {
			return
		}
		b.mu.Lock()
		cancel := b.inFlight[string(id)]
		b.mu.Unlock()
		if cancel != nil {
			b.log.Debug("snodo bridge: the client cancelled a request", "id", string(id))
			cancel()
		}
	default: // notifications/initialized, roots/list_changed, …: nothing to forward
	}
}

// request answers initialize and ping here and forwards every other
// request to the served name.
func (b *bridge) request(ctx context.Context, env jsonrpc.Envelope) {
	id := slices.Clone(env.ID)
	method := env.MethodName()
	switch method {
	case "ping":
		b.writeResult(id, []byte("{}"))
		return
	}
	select {
	case b.slots <- struct{}{}:
	default:
		b.writeError(id, jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed,
			fmt.Sprintf("snodo bridge: %d requests are forwarded already (its bound); send this one again once some have ended", bridgeMaxInFlight)))
		return
	}
	params := slices.Clone(env.Params)
	rctx, cancel := context.WithCancel(ctx)
	key := string(id)
	b.mu.Lock()
	_, dup := b.inFlight[key]
	if !dup {
		b.inFlight[key] = cancel
	}
	b.mu.Unlock()
	if dup {
		cancel()
		<-b.slots
		b.writeError(id, &snodo.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: id " + key + " is already in use by a request in flight"})
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() { <-b.slots }()
		defer func() {
			b.mu.Lock()
			delete(b.inFlight, key)
			b.mu.Unlock()
			cancel()
		}()
		switch method {
		case "initialize":
			b.initialize(rctx, id, params)
			return
		case "subscriptions/listen":
			b.listen(rctx, id, params)
			return
		}
		b.forward(rctx, id, method, params)
	}()
}

// forward sends one request to the served name and writes its outcome
// back under the client's id. A request the client cancelled gets no
// answer, as the protocol asks.
func (b *bridge) forward(ctx context.Context, id []byte, method string, params []byte) {
	var opts []snodo.RequestOption
	if meta, _ := jsonrpc.Member(params, "_meta"); len(meta) > 0 {
		if token, _ := jsonrpc.Member(meta, "progressToken"); len(token) > 0 {
			token = slices.Clone(token)
			opts = append(opts, snodo.ResetTimeoutOnProgress(), snodo.OnProgress(func(p snodo.Progress) {
				b.progress(token, p)
			}))
		}
	}
	var ps any
	if len(params) > 0 {
		ps = json.RawMessage(params)
	}
	res, err := b.c.Request(ctx, method, ps, opts...)
	if err == nil && inputRequired(res) && !modernRequest(params) {
		res, err = b.completeInput(ctx, method, params, res, opts)
	}
	if ctx.Err() != nil {
		return // cancelled by the client, or the bridge is ending
	}
	if err != nil {
		b.writeError(id, asRPCError(err))
		return
	}
	b.writeResult(id, res)
}

// The _meta members of a modern request and of a subscription's
// messages.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
)

// listen opens a subscription on a host of the name for a modern
// client's subscriptions/listen: its acknowledgement and events go to the
// client under the client's request id, and its end is the request's
// answer. The client ends it with notifications/cancelled (no answer).
func (b *bridge) listen(ctx context.Context, id, params []byte) {
	var p struct {
		Notifications snodo.Filter `json:"notifications"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		b.writeError(id, &snodo.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params of subscriptions/listen: " + err.Error()})
		return
	}
	sub, err := b.c.Listen(ctx, p.Notifications)
	if ctx.Err() != nil {
		if sub != nil {
			_ = sub.Close()
		}
		return
	}
	if err != nil {
		b.writeError(id, asRPCError(err))
		return
	}
	defer sub.Close()
	ack, err := json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: id}, "notifications": sub.Acknowledged()})
	if err != nil {
		b.writeError(id, asRPCError(err))
		return
	}
	b.write(jsonrpc.AppendNotification(nil, "notifications/subscriptions/acknowledged", ack))
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				if err := sub.Err(); err != nil && !errors.Is(err, snodo.ErrSubscriptionClosed) {
					b.writeError(id, asRPCError(err))
					return
				}
				end, _ := json.Marshal(map[string]any{"resultType": "complete", "_meta": map[string]json.RawMessage{metaSubscriptionID: id}})
				b.writeResult(id, end)
				return
			}
			params, err := withSubscriptionID(ev.Params, id)
			if err != nil {
				b.log.Warn("snodo bridge: an event with malformed params; dropped", "method", ev.Method, "error", err)
				continue
			}
			b.write(jsonrpc.AppendNotification(nil, ev.Method, params))
		case <-ctx.Done():
			return
		}
	}
}

// withSubscriptionID is an event's params with _meta's subscription id
// set to the client's (the host's server knows its own).
func withSubscriptionID(params, id []byte) ([]byte, error) {
	members := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &members); err != nil {
			return nil, err
		}
	}
	meta := map[string]json.RawMessage{}
	if raw := members["_meta"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	meta[metaSubscriptionID] = id
	var err error
	if members["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(members)
}

// modernRequest tells a request of a modern client (its _meta names its
// protocol version): it completes input_required rounds itself.
func modernRequest(params []byte) bool {
	meta, _ := jsonrpc.Member(params, "_meta")
	if len(meta) == 0 {
		return false
	}
	v, _ := jsonrpc.Member(meta, metaProtocolVersion)
	return len(v) > 0
}

// inputRequired tells an input_required result (a modern server's), which
// a legacy client cannot read.
func inputRequired(res []byte) bool {
	rt, _ := jsonrpc.Member(res, "resultType")
	return string(rt) == `"input_required"`
}

// completeInput completes the input_required rounds of a call for the
// legacy client, which knows none: snodo's typed call runs the rounds
// (each input request goes to the client as a request of its era, by
// serverRequest), starting from the result already in hand, and the
// final round's raw result is the answer.
func (b *bridge) completeInput(ctx context.Context, method string, params, first []byte, opts []snodo.RequestOption) (json.RawMessage, error) {
	r := &rounds{c: b.c, first: first}
	calls := snodo.NewCalls(r)
	var err error
	switch method {
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			_, err = calls.CallTool(ctx, p.Name, p.Arguments, opts...)
		}
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			_, err = calls.ReadResource(ctx, p.URI, opts...)
		}
	case "prompts/get":
		var p struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			_, err = calls.GetPrompt(ctx, p.Name, p.Arguments, opts...)
		}
	default:
		return nil, &snodo.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("snodo bridge: the served server asked for input (input_required) in answer to %s, which the bridge cannot complete for a legacy client", method)}
	}
	if err != nil {
		return nil, err
	}
	return r.last, nil
}

// rounds is the Requester of one call's input rounds: its first request
// is answered with the result already in hand (it was sent), the others
// go to the served name; the last raw result is kept.
type rounds struct {
	c     *remote.Client
	first json.RawMessage
	last  json.RawMessage
}

func (r *rounds) Request(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error) {
	if r.first != nil {
		r.last, r.first = r.first, nil
		return r.last, nil
	}
	raw, err := r.c.Request(ctx, method, params, opts...)
	r.last = raw
	return raw, err
}
func (r *rounds) Era() snodo.Era                     { return r.c.Era() }
func (r *rounds) InputHandling() snodo.InputHandling { return r.c.InputHandling() }

// asRPCError is err as the client sees it: the MCP server's or the
// host's *snodo.Error as it is, anything else a -32603 saying what.
func asRPCError(err error) *snodo.Error {
	var e *snodo.Error
	if errors.As(err, &e) {
		return e
	}
	return &snodo.Error{Code: jsonrpc.CodeInternalError, Message: "snodo bridge: " + err.Error()}
}

// progress sends the client a progress notification for its token.
func (b *bridge) progress(token []byte, p snodo.Progress) {
	params := struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress float64         `json:"progress"`
		Total    float64         `json:"total,omitempty"`
		Message  string          `json:"message,omitempty"`
	}{token, p.Progress, p.Total, p.Message}
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	b.write(jsonrpc.AppendNotification(nil, "notifications/progress", raw))
}

// initialize answers the client's initialize with what a host of the
// name reports about its server, as far as the bridge can forward it.
func (b *bridge) initialize(ctx context.Context, id, params []byte) {
	var req struct {
		ProtocolVersion string                   `json:"protocolVersion"`
		Capabilities    snodo.ClientCapabilities `json:"capabilities"`
	}
	_ = json.Unmarshal(params, &req)
	b.caps.Store(&req.Capabilities)
	ictx, cancel := context.WithTimeout(ctx, bridgeInfoWait)
	defer cancel()
	si, err := b.c.Info(ictx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		b.writeError(id, asRPCError(fmt.Errorf("snodo bridge: initialize: %w", err)))
		return
	}
	_, legacy := snodo.SupportedVersions()
	version := legacy[0]
	switch {
	case slices.Contains(legacy, req.ProtocolVersion):
		version = req.ProtocolVersion
	case si.Era == snodo.EraLegacy.String() && slices.Contains(legacy, si.ProtocolVersion):
		version = si.ProtocolVersion
	}
	res := struct {
		ProtocolVersion string                   `json:"protocolVersion"`
		Capabilities    snodo.ServerCapabilities `json:"capabilities"`
		ServerInfo      snodo.Implementation     `json:"serverInfo"`
		Instructions    string                   `json:"instructions,omitempty"`
	}{version, bridgedCapabilities(si.Capabilities), si.ServerInfo, si.Instructions}
	raw, err := json.Marshal(res)
	if err != nil {
		b.writeError(id, asRPCError(err))
		return
	}
	b.log.Debug("snodo bridge: initialized", "protocolVersion", version, "server", si.ServerInfo.Name, "era", si.Era)
	b.writeResult(id, raw)
}

// bridgedCapabilities is what the bridge can offer of the served
// server's capabilities: no notifications reach a remote caller in this
// era (list changes, resource updates, log messages), the hosts keep
// resource subscriptions and the log level, and tasks are not pinned to
// one host, so those are left out.
func bridgedCapabilities(c snodo.ServerCapabilities) snodo.ServerCapabilities {
	out := snodo.ServerCapabilities{Completions: c.Completions, Experimental: c.Experimental}
	if c.Tools != nil {
		out.Tools = &snodo.ListChangedCapability{}
	}
	if c.Prompts != nil {
		out.Prompts = &snodo.ListChangedCapability{}
	}
	if c.Resources != nil {
		out.Resources = &snodo.ResourcesCapability{}
	}
	return out
}

// serverRequest sends a request of the served server's (an input
// request: sampling, elicitation, roots) to the client under a fresh id
// and returns its answer, bounded by ctx.
func (b *bridge) serverRequest(ctx context.Context, req *snodo.ServerRequest) (any, error) {
	if caps := b.caps.Load(); caps != nil && !declares(caps, req.Method) {
		// The client said it cannot answer it: it is not sent.
		return nil, &snodo.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("snodo bridge: the client did not declare the capability %s needs, so it was not asked", req.Method)}
	}
	n := b.nextID.Add(1)
	id := "snodo-bridge-" + strconv.FormatInt(n, 10)
	ch := make(chan jsonrpc.Envelope, 1)
	b.mu.Lock()
	if len(b.asked) >= bridgeMaxInFlight {
		b.mu.Unlock()
		return nil, fmt.Errorf("snodo bridge: %d requests wait for the client's answer already (its bound)", bridgeMaxInFlight)
	}
	b.asked[n] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.asked, n)
		b.mu.Unlock()
	}()
	params := req.Params
	if len(params) == 0 {
		params = nil
	}
	buf := append([]byte(`{"jsonrpc":"2.0","id":`), jsonrpc.AppendString(nil, id)...)
	buf = append(buf, `,"method":`...)
	buf = jsonrpc.AppendString(buf, req.Method)
	if params != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	buf = append(buf, "}\n"...)
	if !b.write(buf) {
		return nil, errors.New("snodo bridge: the client's stdout is closed")
	}
	select {
	case env := <-ch:
		if env.Error != nil {
			var e snodo.Error
			if err := json.Unmarshal(env.Error, &e); err != nil {
				return nil, fmt.Errorf("snodo bridge: the client answered %s with a malformed error: %w", req.Method, err)
			}
			return nil, &e
		}
		return json.RawMessage(slices.Clone(env.Result)), nil
	case <-ctx.Done():
		cancelled, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the served server no longer waits"})
		b.write(jsonrpc.AppendNotification(nil, "notifications/cancelled", cancelled))
		return nil, ctx.Err()
	}
}

// declares tells whether a client with caps answers method.
func declares(caps *snodo.ClientCapabilities, method string) bool {
	switch method {
	case "sampling/createMessage":
		return caps.Sampling != nil
	case "elicitation/create":
		return caps.Elicitation != nil
	case "roots/list":
		return caps.Roots != nil
	}
	return true // one snodo does not know: the client says
}

// answered routes the client's answer to a request of the bridge's.
func (b *bridge) answered(env jsonrpc.Envelope) {
	var id string
	if json.Unmarshal(env.ID, &id) != nil {
		return
	}
	var n int64
	if _, err := fmt.Sscanf(id, "snodo-bridge-%d", &n); err != nil {
		return
	}
	b.mu.Lock()
	ch := b.asked[n]
	b.mu.Unlock()
	if ch == nil {
		b.log.Debug("snodo bridge: an answer to no request of the bridge's", "id", id)
		return
	}
	env.Result, env.Error = slices.Clone(env.Result), slices.Clone(env.Error)
	select {
	case ch <- env:
	default: // a second answer: the first wins
	}
}

func (b *bridge) writeResult(id, result []byte) {
	line, err := jsonrpc.OneLine(result)
	if err != nil {
		b.writeError(id, &snodo.Error{Code: jsonrpc.CodeInternalError, Message: "snodo bridge: the served server's result is not valid JSON: " + err.Error()})
		return
	}
	b.write(jsonrpc.AppendResult(nil, id, line))
}

func (b *bridge) writeError(id []byte, e *snodo.Error) {
	b.write(jsonrpc.AppendError(nil, id, e))
}

// write writes one message line to the client; false once stdout failed.
func (b *bridge) write(line []byte) bool {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if b.wrote != nil {
		return false
	}
	if _, err := b.out.Write(line); err != nil {
		b.wrote = err
		b.log.Warn("snodo bridge: cannot write to the client; ending", "error", err)
		if b.gone != nil {
			b.gone()
		}
		return false
	}
	return true
}

// outGone reports whether a write to the client failed.
func (b *bridge) outGone() bool {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	return b.wrote != nil
}
