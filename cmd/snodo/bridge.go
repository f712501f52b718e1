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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
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
	b := newBridge(sio.out, cfg.serverName, log)
	opts := []remote.ClientOption{
		remote.WithNATSOptions(natsOptions(cfg)...),
		remote.WithConnectOptions(snodo.WithTimeout(cfg.timeout), snodo.WithLogger(log),
			snodo.WithServerRequestHandler(b.serverRequest)),
	}
	if cfg.prefix != "" {
		opts = append(opts, remote.WithPrefix(cfg.prefix))
	}
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

	slots chan struct{}  // one per forwarded request, bridgeMaxInFlight
	wg    sync.WaitGroup // the forwarded requests
	bg    sync.WaitGroup // what lives as long as the bridge (a legacy client's list changes)

	caps      atomic.Pointer[snodo.ClientCapabilities] // a legacy client's, from its initialize
	listening atomic.Bool                              // a legacy client's list changes are forwarded
	life      context.Context                          // serve's: ends with the bridge

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
	b.life = ctx
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r, limits.MaxLineBytes)
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
	all := make(chan struct{})
	go func() { <-done; b.bg.Wait(); close(all) }()
	t.Reset(bridgeDrain)
	select {
	case <-all:
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
			b.writeError(nil, &snodo.Error{Code: jsonrpc.CodeParseError, Message: fmt.Sprintf("message longer than %d bytes: skipped", limits.MaxLineBytes)})
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
