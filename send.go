package snodo

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Sending: every request of a Client, typed or raw, passes Request's one
// path here. Request options (RequestOption) are read into the
// connection's CallOptions; request adds the modern era's _meta; send is
// the one send point, where telemetry (telemetry.go) hooks in with begin
// and end around the connection's Request, which owns the request table,
// timeouts and cancellation (internal/engine/request.go).

// Progress is one progress update for a request: what OnProgress's
// function gets, and the message an actor receives for each update of a
// *Call or *ToolCall sent with Progress set, in order, before its reply
// (then Tag and Origin say which call and which server; they are zero
// for OnProgress).
type Progress struct {
	quiet
	Progress float64 // how far along; increases with every update
	Total    float64 // the total, when the server knows it; 0 otherwise
	Message  string  // an optional human-readable status
	Tag      any     // the call's Tag (actor messages only)
	Origin           // the server that sent it (actor messages only)
}

// toConnProgress is fn in the connection's terms (nil stays nil).
func toConnProgress(fn func(Progress)) func(engine.Progress) {
	if fn == nil {
		return nil
	}
	return func(p engine.Progress) { fn(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}) }
}

// fromConnProgress is fn in the root's terms (nil stays nil).
func fromConnProgress(fn func(engine.Progress)) func(Progress) {
	if fn == nil {
		return nil
	}
	return func(p Progress) { fn(engine.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}) }
}

// RequestOption tunes one request. Build it with Timeout, OnProgress,
// ResetTimeoutOnProgress, MaxTotalTimeout, Idempotent, MaxPages, TaskTTL,
// OnTaskStatus or RetryURLElicitation; every kind of session (a Client,
// a supervised client, a pool, a remote client) reads the values back as
// one settings type. The zero RequestOption sets nothing.
//
// An option is a plain value, one encoding for every setting: which one
// it sets and the value, in the field of its type. Making one and
// reading a list of them allocate nothing. It has no fields or methods
// of its own: it is the value of the internal type it names.
type RequestOption = calls.Option[Progress, TaskStatus]

// requestSettings are the values a request's options set: the one type
// every requester (this Client, a supervised client, a pool, a remote
// client) reads them as. The zero value means the defaults.
type requestSettings = calls.Settings[Progress, TaskStatus]

// settingsOf applies opts in order (a later option of the same setting
// wins) and returns the result.
func settingsOf(opts ...RequestOption) requestSettings { return calls.Of(opts) }

// defaultMaxPages is how many pages a list call (ListTools, …) follows
// at most when MaxPages is not given.
const defaultMaxPages = 1000

// MaxPages bounds the pages a list call follows through
// nextCursor (default 1000): past it the call fails with an
// error naming this option, instead of following a server that hands out
// a fresh cursor for ever. n <= 0 means 1000. Other calls
// ignore it.
func MaxPages(n int) RequestOption {
	return calls.Count[Progress, TaskStatus](calls.KeyMaxPages, n)
}

// Timeout overrides the connection's timeout for this request; a negative
// value waits for ever. On expiry the caller gets a -32001 *Error
// (errors.Is(err, ErrTimeout)) and the server notifications/cancelled.
func Timeout(d time.Duration) RequestOption {
	return calls.Duration[Progress, TaskStatus](calls.KeyTimeout, d)
}

// OnProgress asks the server for progress (a progressToken in
// params._meta) and runs fn for each update, on the caller's goroutine, in
// order, before Request returns. If fn panics, the request is cancelled on
// the server and the panic continues in the caller.
func OnProgress(fn func(Progress)) RequestOption {
	return calls.OnProgress[Progress, TaskStatus](fn)
}

// ResetTimeoutOnProgress restarts the request's timeout at each progress
// update, so long-running work that reports progress does not time out.
// It asks the server for progress (a progressToken) by itself; OnProgress
// is not needed.
func ResetTimeoutOnProgress() RequestOption {
	return calls.Flag[Progress, TaskStatus](calls.KeyResetTimeoutOnProgress)
}

// MaxTotalTimeout caps the whole wait, whatever the progress (with
// ResetTimeoutOnProgress too); past it the caller gets a -32001 *Error
// and the server notifications/cancelled. Zero or a negative d sets no
// cap.
func MaxTotalTimeout(d time.Duration) RequestOption {
	return calls.Duration[Progress, TaskStatus](calls.KeyMaxTotalTimeout, d)
}

// Idempotent marks a request as safe to run twice. A supervised client or
// a pool whose server goes away while the request is in flight sends it
// once more to the next server (the restarted one, or another member)
// instead of failing with -32000. Requests not so marked are never
// retried: one may have run on the server before it died. A plain Client
// has no next server and ignores it.
func Idempotent() RequestOption {
	return calls.Flag[Progress, TaskStatus](calls.KeyIdempotent)
}

// connOptions are opts in the connection's terms; nil when there are none.
func connOptions(opts []RequestOption) *engine.CallOptions {
	if len(opts) == 0 {
		return nil
	}
	s := settingsOf(opts...)
	return &engine.CallOptions{
		Timeout:                s.Timeout,
		OnProgress:             toConnProgress(s.OnProgress),
		ResetTimeoutOnProgress: s.ResetTimeoutOnProgress,
		MaxTotalTimeout:        s.MaxTotalTimeout,
	}
}

// Request sends a JSON-RPC request and returns the raw result. params may
// be nil, a json.RawMessage, or anything json.Marshal accepts. It is raw:
// an input_required result (modern era) is returned as it is; the typed
// calls (CallTool…) complete those rounds. Errors: a
// *Error the server sent; a local *Error (-32001 on timeout, errors.Is
// ErrTimeout; -32000 when the connection is gone, errors.Is
// ErrConnectionClosed); or ctx's error. On timeout or cancellation the
// server is sent notifications/cancelled.
func (c *Client) Request(ctx context.Context, method string, params any, opts ...RequestOption) (json.RawMessage, error) {
	return c.request(ctx, method, params, connOptions(opts))
}

// The per-request _meta of the modern era: what every request carries,
// encoded once per change (the log level) and spliced into each request's
// params by the connection as the line is written. Negotiation (era.go)
// builds the base members; nothing decodes them again.

// Keys of the modern per-request _meta object.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// buildMeta is the required modern _meta for version.
func buildMeta(version string, cfg *mcpConfig) map[string]json.RawMessage {
	v, _ := json.Marshal(version)
	info, _ := json.Marshal(cfg.clientInfo)
	caps, _ := json.Marshal(cfg.capabilities)
	return map[string]json.RawMessage{metaProtocolVersion: v, metaClientInfo: info, metaClientCapabilities: caps}
}

// request sends one request, adding what the negotiated era requires:
// in the modern era the connection merges the encoded _meta into params
// as it writes the line (the caller's own _meta members win).
func (c *Client) request(ctx context.Context, method string, params any, opts *engine.CallOptions) (json.RawMessage, error) {
	return c.send(ctx, method, params, c.encodedMeta(), opts)
}

// setMeta sets the modern _meta to baseMeta plus level, if any: the
// base itself without one (an idle client keeps one copy), else the base
// with the level's member added before its closing brace.
func (c *Client) setMeta(level LoggingLevel) {
	encoded := c.mcp.baseMeta
	if base := c.mcp.baseMeta; level != "" && len(base) > len("{}") {
		encoded = append(append(make([]byte, 0, len(base)+len(metaLogLevel)+len(level)+8), base[:len(base)-1]...), `,"`+metaLogLevel+`":`...)
		encoded = append(jsonrpc.AppendString(encoded, string(level)), '}')
	}
	c.mcp.meta.Store(&encoded)
}

// encodedMeta is the _meta every request carries in the negotiated era,
// as one JSON object; nil in the legacy era. Callers must not change it.
func (c *Client) encodedMeta() []byte {
	if p := c.mcp.meta.Load(); p != nil {
		return *p
	}
	return nil
}

// send makes one request through the connection, traced and measured as
// one operation when telemetry is on: the one place every request of a
// Client passes (typed calls, Request, supervisors and pools, the era
// negotiation).
func (c *Client) send(ctx context.Context, method string, params any, meta []byte, opts *engine.CallOptions) (json.RawMessage, error) {
	c.recordOrigin(ctx)
	ctx, o, params, opts := c.site.begin(ctx, method, params, opts)
	var withMeta engine.CallOptions // stays on the stack: Request keeps no pointer to it
	if meta != nil {
		if opts != nil {
			withMeta = *opts
		}
		withMeta.Meta, withMeta.MetaKept = meta, true // encodedMeta's bytes never change
		opts = &withMeta
	}
	if o == nil {
		return c.conn.Request(ctx, method, params, opts)
	}
	raw, err := c.conn.Request(ctx, method, params, opts)
	o.end(raw, err)
	return raw, err
}
