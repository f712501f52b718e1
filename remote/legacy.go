package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// A client of the legacy era (snodo.WithEra(snodo.EraLegacy)): its calls
// ask for the hosts' legacy-era connections (ServeLegacy), which relay to
// it what their server sends during a call: requests (kindRequest, a NATS
// request whose answer goes back to the host) and log messages (kindLog).

// relayQueue bounds the server requests of one call waiting for the
// caller's loop; past it one is answered at once with an error.
const relayQueue = 4

// setLevel keeps a legacy-era client's logging level: the host's
// connection is shared by every caller, so the level travels with each
// call instead (Snodo-Opts log=LEVEL), and the host gives each call the
// log messages at or above its caller's level.
func (c *Client) setLevel(params any) (json.RawMessage, error) {
	raw, err := jsonrpc.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("remote: logging/setLevel: cannot marshal params: %w", err)
	}
	lv, _ := jsonrpc.Member(raw, "level")
	level := jsonrpc.Unquote(lv)
	if logRank(level) < 0 {
		return nil, &snodo.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("Invalid params: logging/setLevel needs a level, one of %v", logLevels)}
	}
	c.level.Store(&level)
	return json.RawMessage(`{}`), nil
}

// logLevel is the level logging/setLevel set, "" before.
func (c *Client) logLevel() string {
	if l := c.level.Load(); l != nil {
		return *l
	}
	return ""
}

// relayLog gives a log message a host relayed for a call to the
// client's notification handler, on the call's goroutine, before the
// call's result.
func (c *Client) relayLog(ctx context.Context, m *nats.Msg) {
	if c.cfg.notify == nil || !json.Valid(m.Data) {
		return
	}
	c.cfg.notify(ctx, "notifications/message", json.RawMessage(m.Data))
}

// answerRelayed answers a server request a host relayed for a call with
// the client's handler, on a goroutine of its own (the call goes on
// taking its messages), under ctx, which ends with the call. An answer
// that comes after the call ended is not sent: the host has stopped
// waiting.
func (c *Client) answerRelayed(ctx context.Context, m *nats.Msg) {
	env, err := jsonrpc.Scan(m.Data)
	if err != nil || env.Kind != jsonrpc.KindRequest {
		refuseRelayed(m, "the host relayed no JSON-RPC request")
		return
	}
	if c.cfg.handler == nil {
		_ = m.Respond(trimNL(jsonrpc.AppendError(nil, env.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "the caller has no handler for " + env.MethodName() + " (snodo.WithServerRequestHandler)"})))
		return
	}
	req := &snodo.ServerRequest{ID: env.ID, Method: env.MethodName(), Params: env.Params}
	c.serving.Add(1)
	go func() {
		defer c.serving.Done()
		out := trimNL(c.handle(ctx, env.ID, req))
		if ctx.Err() == nil {
			_ = m.Respond(out)
		}
	}()
}

// handle runs the handler for req and returns the JSON-RPC response: a
// returned *snodo.Error as it is, any other error or a panic as -32603.
func (c *Client) handle(ctx context.Context, id []byte, req *snodo.ServerRequest) (out []byte) {
	defer func() {
		if r := recover(); r != nil {
			c.cfg.logger.Error("remote: the server request handler panicked", "method", req.Method, "panic", r)
			out = jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the caller's handler failed"})
		}
	}()
	res, err := c.cfg.handler(ctx, req)
	if err != nil {
		var e *jsonrpc.Error
		if !errors.As(err, &e) {
			e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: e.Data})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the caller's handler answered a result that cannot be marshalled: " + err.Error()})
	}
	return jsonrpc.AppendResult(nil, id, b)
}

// refuseRelayed answers a relayed request with an error saying why the
// caller did not take it.
func refuseRelayed(m *nats.Msg, why string) {
	env, _ := jsonrpc.Scan(m.Data)
	_ = m.Respond(trimNL(jsonrpc.AppendError(nil, env.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "remote caller: " + why})))
}

// callScope is a context that ends with a call, made when first needed
// (most calls relay nothing).
type callScope struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (s *callScope) get(parent context.Context) context.Context {
	if s.ctx == nil {
		s.ctx, s.cancel = context.WithCancel(parent)
	}
	return s.ctx
}

func (s *callScope) end() {
	if s.cancel != nil {
		s.cancel()
	}
}
