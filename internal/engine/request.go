package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/snodo/snodo/internal/callerrun"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/telemetry"
)

// Progress is one notifications/progress update for a request.
type Progress struct {
	Progress float64 // how far along; increases with every update
	Total    float64 // the total, when the server knows it; 0 otherwise
	Message  string  // optional human-readable status
}

// CallOptions tune one request. The zero value uses the connection's
// defaults.
//
// It is the engine's own, not snodo's request settings: this package sits
// below snodo and speaks its own Progress, a request it sends carries
// what only the engine handles (Meta, Sent, a subscription's stream), and
// the settings a session reads of snodo.RequestOption that the engine
// never sees (Idempotent, MaxPages, a task's TTL and status) stay out of
// it. snodo turns a request's options into one of these on its send path.
type CallOptions struct {
	// Timeout for this request: 0 uses the connection's, negative waits
	// for ever (until the ctx is done or the connection stops).
	Timeout time.Duration
	// OnProgress, when set, gives the request a progressToken (in
	// params._meta) and runs for each progress update, on the caller's
	// goroutine, in order, before the result is returned.
	OnProgress func(Progress)
	// ResetTimeoutOnProgress restarts the timeout at each progress update.
	// Like OnProgress, it gives the request a progressToken.
	ResetTimeoutOnProgress bool
	// MaxTotalTimeout caps the whole wait whatever the progress; 0: none.
	MaxTotalTimeout time.Duration
	// Meta, an encoded JSON object, adds its members to params._meta (the
	// MCP request metadata: protocol version, client info, extension
	// keys); members params already has in its own _meta win. nil adds
	// none. Request does not change or keep it. It is checked like raw
	// params: one that spans lines is compacted, and one that is not one
	// JSON object fails with a local -32602 before anything is sent.
	Meta json.RawMessage
	// Sent, when set, is called with the request's ID just before the
	// request is queued for writing (so before any answer can arrive):
	// the ID to find the request by in the server's log or a trace, or to
	// correlate a stream's notifications with it. If it panics, the
	// request is not sent and the panic continues in Request's caller.
	Sent func(id int64)

	// moduleCallOptions holds what only snodo's own packages set (the
	// Stream of a subscriptions/listen request, set by package
	// subscription), out of this package's documentation.
	moduleCallOptions
}

// moduleCallOptions is embedded in CallOptions: its fields are set by
// internal/substream (opts.Stream = …) and, their type being internal,
// by no one else. What the server still sends for a request whose Stream
// panicked is dropped as for a request the caller gave up (counted, not
// logged).
type moduleCallOptions = connseam.CallOptions

var noOptions CallOptions

// Request sends method with params and waits for the answer. params may be
// nil, a json.RawMessage, or anything json.Marshal accepts. It returns the
// raw result, a *jsonrpc.Error (from the server, or local: -32001 on
// timeout, -32000 when the connection is gone), or ctx's error.
//
// The trace context of ctx (traceparent, tracestate), when ctx carries a
// span, and opts.Meta go into params._meta. The common case — params
// without a _meta of their own and no progress token — splices these in
// as the line is written, at no allocation when ctx carries no span;
// otherwise the members are merged, the caller's keys in params winning.
//
// Any number of goroutines may call Request at once. On timeout or ctx
// cancellation the server is sent notifications/cancelled for the request;
// the caller does not wait for that write.
func (c *Conn) Request(ctx context.Context, method string, params any, opts *CallOptions) (json.RawMessage, error) {
	if ctx == nil {
		return nil, nilContextError(method)
	}
	if err := doneError(ctx, method); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &noOptions
	}
	p, splice, err := c.marshalParams(method, params)
	if err != nil {
		return nil, err
	}
	meta, err := c.checkMeta(method, opts.Meta, opts.MetaKept)
	if err != nil {
		return nil, err
	}
	cl := newCall(opts)
	timeout := c.timeoutOf(opts)
	now := monoNow()
	id, err := c.table.add(cl, after(now, timeout), after(now, opts.MaxTotalTimeout))
	if err != nil { // the table is closed: nothing was sent
		cl.release()
		return nil, notSentError(err)
	}
	traceCtx := traceMembers(ctx, p)
	if cl.wantProgress || ((meta != nil || traceCtx != nil) && !splice) {
		if p, err = mergeMeta(p, meta, traceCtx, id, cl.wantProgress); err != nil {
			c.table.abandon(id, cl)
			c.table.release(cl)
			return nil, jsonrpc.ParamsError(method, err)
		}
		meta, traceCtx = nil, nil
	}
	if opts.Sent != nil {
		c.sent(opts.Sent, id, cl)
	}
	if len(method)+len(p)+len(meta)+len(traceCtx) < maxKeptLine-256 {
		// The common, small line: built here, outside the writer's lock
		// (in the call's own reused buffer), then handed over whole.
		cl.line = jsonrpc.AppendRequestMeta(cl.line[:0], id, method, p, meta, traceCtx)
		if o, ok := c.out.(*channelOut); ok && !cl.wantProgress && cl.stream == nil {
			// The Channel may leave the exchange to this goroutine.
			var run callerrun.Runner
			r := callerrun.Request{ID: id, Method: method, Params: p, Meta: meta, Answer: c.answer}
			if run, err = o.appendRequest(cl.line, &r); run != nil {
				c.runHere(ctx, id, cl, run)
			}
		} else {
			cl.ticket, err = c.out.appendBuilt(lineCaller, cl.line)
		}
	} else { // a large line goes straight into the queue: one copy, not two
		cl.ticket, err = c.out.append(lineCaller, func(b []byte) []byte { return jsonrpc.AppendRequestMeta(b, id, method, p, meta, traceCtx) })
	}
	if err == errQueueFull && c.table.abandon(id, cl) {
		c.table.release(cl)
		return nil, queueFullError(method, c.cfg.MaxWriteQueue)
	}
	// A writer that no longer takes lines means the connection is stopping:
	// the stop fails this call with its reason, so wait for it. The line
	// was not taken: the call counts as never sent.
	refused := err != nil
	res, err := c.await(ctx, id, cl, method, timeout, opts)
	if err != nil {
		err = c.notSent(err, cl.ticket, refused)
	}
	c.table.release(cl)
	return res, err
}

// runHere runs request id's exchange, which the Channel left to its
// caller, on the caller's goroutine: when it returns, the answer is in
// (or the request failed, or the rest of the answer, a stream, went to
// the transport's own goroutine). A done ctx or a passed deadline
// interrupts it, so the caller gives up as promptly as when it waits.
func (c *Conn) runHere(ctx context.Context, id int64, cl *call, run callerrun.Runner) {
	c.table.running(id, cl, run)
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, run.Interrupt)
	}
	cancelled := run.Run()
	if stop != nil {
		stop()
	}
	c.table.ran(id, cl, cancelled)
}

// maxKeptParams bounds the raw params a connection keeps checked: past
// it, comparing would cost about as much as checking.
const maxKeptParams = 4 << 10

// checkedParams are raw params found to be one JSON value on one line.
type checkedParams struct {
	raw    []byte // a copy: the caller may change its own
	splice bool   // _meta splices into them (jsonrpc.CanSpliceMeta)
}

// marshalParams is jsonrpc.MarshalParamsSplice, at the cost of one
// comparison for raw params equal to the last ones checked (a caller
// sending the same encoded params again: a poll, a benchmark, a typed
// layer's fixed arguments): the kept copy is what goes on the wire, so
// a caller changing its bytes meanwhile cannot put an unchecked byte in
// the line. Raw params are kept once the same slice comes twice in a
// row (and are at most maxKeptParams), so params that change on every
// call cost no copy.
func (c *Conn) marshalParams(method string, params any) ([]byte, bool, error) {
	var raw []byte
	switch p := params.(type) {
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	}
	if len(raw) == 0 || len(raw) > maxKeptParams {
		return jsonrpc.MarshalParamsSplice(method, params, "")
	}
	if k := c.paramsOK.Load(); k != nil && bytes.Equal(k.raw, raw) {
		return k.raw, k.splice, nil
	}
	p, splice, err := jsonrpc.MarshalParamsSplice(method, params, "")
	if err == nil && len(p) == len(raw) { // on one line as given
		if at := uintptr(unsafe.Pointer(&raw[0])); c.paramsSeen.Swap(at) == at {
			// Clipped: whoever appends to the params gets a copy, never
			// writes into spare room others read.
			c.paramsOK.Store(&checkedParams{raw: slices.Clip(bytes.Clone(raw)), splice: splice})
		}
	}
	return p, splice, err
}

// checkMeta checks CallOptions.Meta as params are checked, since it goes
// into the line as it is: one JSON object, compacted when it spans lines;
// anything else is a local -32602 and nothing is sent. Empty is none.
// The bytes of the last one-line Meta that passed are kept (a copy,
// unless MetaKept says they never change): the same bytes again (the
// root's _meta, the same for every request until the log level changes)
// pass with one comparison instead of a scan.
func (c *Conn) checkMeta(method string, meta []byte, kept bool) ([]byte, error) {
	if len(meta) == 0 {
		return nil, nil
	}
	if ok := c.metaOK.Load(); ok != nil && bytes.Equal(*ok, meta) {
		return meta, nil
	}
	m, err := jsonrpc.OneLine(meta)
	if err == nil {
		if t := bytes.TrimSpace(m); t[0] != '{' {
			err = fmt.Errorf("is %s, not an object", sample(t))
		}
	}
	if err != nil {
		return nil, jsonrpc.ParamsError(method, fmt.Errorf("_meta (CallOptions.Meta) %w", err))
	}
	if len(m) == len(meta) { // on one line as given (compacting shortens)
		keep := meta
		if !kept { // the caller may change its bytes: keep a copy
			keep = bytes.Clone(meta)
		}
		c.metaOK.Store(&keep)
	}
	return m, nil
}

// sent runs the Sent callback. If it panics, the request, not yet
// queued, leaves the table and the panic continues in the caller.
func (c *Conn) sent(fn func(int64), id int64, cl *call) {
	defer func() {
		if r := recover(); r != nil {
			c.table.abandon(id, cl)
			c.table.release(cl)
			panic(r)
		}
	}()
	fn(id)
}

// timeoutOf is a request's timeout: its own, or the connection's.
func (c *Conn) timeoutOf(opts *CallOptions) time.Duration {
	if opts.Timeout != 0 {
		return opts.Timeout
	}
	return c.cfg.Timeout
}

// traceMembers is the trace context of ctx as _meta members, nil when ctx
// carries no span or params cannot carry _meta (not an object: such
// params go out as they are, untraced, rather than fail).
func traceMembers(ctx context.Context, params []byte) []byte {
	if t := bytes.TrimSpace(params); len(t) > 0 && t[0] != '{' && !bytes.Equal(t, []byte("null")) {
		return nil
	}
	return telemetry.AppendTraceMembers(nil, ctx)
}

// mergeMeta adds meta's members, traceCtx's (encoded members without
// braces) and the progress token (the request ID) to params._meta,
// keeping any member the caller set.
func mergeMeta(params, meta, traceCtx []byte, id int64, progress bool) ([]byte, error) {
	var obj []byte
	if meta != nil || traceCtx != nil {
		obj = jsonrpc.AppendRequestMetaObject(nil, meta, traceCtx)
	}
	if progress {
		return jsonrpc.MergeMetaObject(params, obj, "progressToken", strconv.AppendInt(nil, id, 10))
	}
	return jsonrpc.MergeMetaObject(params, obj, "", nil)
}

// await waits for the answer to request id, running progress callbacks on
// the caller's goroutine as updates arrive. The table's timer wakes it when
// a deadline passes; with a ctx that cannot be cancelled it waits on its
// wake channel alone.
func (c *Conn) await(ctx context.Context, id int64, cl *call, method string, timeout time.Duration, opts *CallOptions) (json.RawMessage, error) {
	cancelled := ctx.Done()
	for {
		if cancelled == nil {
			<-cl.wake
		} else {
			select {
			case <-cl.wake:
			case <-cancelled:
				if c.giveUp(id, cl, "cancelled by the client") {
					return nil, fmt.Errorf("snodo: %s: %w", method, ctx.Err())
				}
				// The answer won the race: it is in (read it below), or,
				// for a stream the server ended, on its way: wait for
				// it on the wake channel alone.
				cancelled = nil
			}
		}
		if !cl.wantProgress && cl.done.Load() { // the common case: no lock
			return cl.result, cl.err
		}
		progress, done, expired := c.table.take(cl)
		if len(progress) > 0 {
			if opts.OnProgress != nil {
				c.runProgress(id, cl, method, opts.OnProgress, progress)
			}
			if opts.ResetTimeoutOnProgress && timeout > 0 && !done {
				c.table.extend(cl, after(monoNow(), timeout))
				if expired == timeoutExpired {
					continue // the progress moved the timeout on
				}
			}
		}
		if done {
			return cl.result, cl.err
		}
		switch expired {
		case timeoutExpired:
			if c.giveUp(id, cl, "timeout") {
				return nil, timeoutError(method, timeout.String(), raiseTimeout)
			}
		case totalExpired:
			if c.giveUp(id, cl, "timeout") {
				return nil, timeoutError(method, "the maximum total time of "+opts.MaxTotalTimeout.String(), raiseTotal)
			}
		case streamFailed:
			if c.giveUp(id, cl, "the client's stream callback failed") {
				return nil, cl.failed
			}
		}
	}
}

// giveUp abandons request id and tells the server, unless the answer won
// the race (then the caller picks it up from the wake channel). A request
// still waiting in the write queue is dropped instead: the server never
// sees it, so there is nothing to cancel, and its bytes are freed.
func (c *Conn) giveUp(id int64, cl *call, reason string) bool {
	if !c.table.abandon(id, cl) {
		return false
	}
	if !cl.cancelled && !c.out.drop(cl.ticket) {
		c.cancelOnServer(id, reason)
	}
	return true
}

// runProgress runs the callback for each update. If the callback panics,
// the request is cancelled on the server and the panic continues.
func (c *Conn) runProgress(id int64, cl *call, method string, fn func(Progress), updates []Progress) {
	defer func() {
		if r := recover(); r != nil {
			c.giveUp(id, cl, "progress callback panicked")
			panic(r)
		}
	}()
	for _, p := range updates {
		fn(p)
	}
}

// cancelOnServer queues notifications/cancelled for request id.
func (c *Conn) cancelOnServer(id int64, reason string) {
	_, _ = c.out.append(lineOwn, func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `,"reason":`...)
		b = jsonrpc.AppendString(b, reason)
		return append(b, "}}\n"...)
	})
}

// Notify writes a notification and returns once the line is written to
// the server's stdin, or ctx is done, or the connection's timeout passes
// (a local -32001), or the connection has stopped (-32000). A notification
// still queued when Notify gives up is dropped, never sent; one the
// writer had begun to write may still reach the server.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	return c.notify(ctx, method, params)
}

// notify writes a notification.
func (c *Conn) notify(ctx context.Context, method string, params any) error {
	if ctx == nil {
		return nilContextError(method)
	}
	if err := doneError(ctx, method); err != nil {
		return err
	}
	p, splice, err := jsonrpc.MarshalParamsSplice(method, params, "")
	if err != nil {
		return err
	}
	// The trace context of ctx goes into params._meta, as for requests.
	traceCtx := traceMembers(ctx, p)
	if traceCtx != nil && !splice {
		if p, err = mergeMeta(p, nil, traceCtx, 0, false); err != nil {
			return jsonrpc.ParamsError(method, err)
		}
		traceCtx = nil
	}
	ticket, written, err := c.out.appendAndWait(func(b []byte) []byte { return jsonrpc.AppendNotificationMeta(b, method, p, traceCtx) })
	if err == errQueueFull {
		return queueFullError(method, c.cfg.MaxWriteQueue)
	}
	if err != nil {
		return c.closedErr()
	}
	var timerC <-chan time.Time
	if c.cfg.Timeout > 0 {
		timer := time.NewTimer(c.cfg.Timeout)
		defer timer.Stop()
		timerC = timer.C
	}
	select {
	case err := <-written:
		if err != nil {
			return c.closedErr()
		}
		return nil
	case <-timerC:
		c.out.drop(ticket)
		return jsonrpc.NewLocalError(jsonrpc.CodeTimeout,
			fmt.Sprintf("%s: not written within %s: the server is not reading its stdin; raise WithTimeout if it is only slow", method, c.cfg.Timeout),
			jsonrpc.ErrTimeout)
	case <-ctx.Done():
		c.out.drop(ticket)
		return fmt.Errorf("snodo: %s: %w", method, ctx.Err())
	}
}

// doneError refuses a call whose ctx is already done, before anything is
// sent (a request would otherwise be written, then cancelled); nil when
// ctx is live. Done is what the wait uses anyway: no extra cost.
func doneError(ctx context.Context, method string) error {
	if done := ctx.Done(); done != nil {
		select {
		case <-done:
			return fmt.Errorf("snodo: %s: %w; nothing was sent", method, ctx.Err())
		default:
		}
	}
	return nil
}

// nilContextError refuses a call made with a nil ctx before anything is sent.
func nilContextError(method string) error {
	return fmt.Errorf("snodo: %s: nil context.Context; nothing was sent: pass context.Background() or a ctx that bounds the call", method)
}

// respond writes the answer to a server request (result, or e when not
// nil). It never blocks; after the connection stopped it does nothing.
// What a handler made is checked like the callers' params: an answer that
// is not one JSON value becomes a -32603, so the wire stays framed.
func (c *Conn) respond(id json.RawMessage, result json.RawMessage, e *jsonrpc.Error) {
	if e != nil && len(e.Data) > 0 {
		data, err := jsonrpc.OneLine(e.Data)
		if err != nil {
			c.cfg.Logger.Warn("snodo: a handler's *Error.Data is not valid JSON; answering -32603 instead", "id", string(id), "error", err)
			e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the client's handler returned an error whose data is not valid JSON"}
		} else if len(data) != len(e.Data) {
			e = &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: data}
		}
	}
	if e == nil && len(result) > 0 {
		r, err := jsonrpc.OneLine(result)
		if err != nil {
			c.cfg.Logger.Warn("snodo: a handler's result is not valid JSON; answering -32603 instead", "id", string(id), "error", err)
			e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the client's handler returned a result that is not valid JSON"}
		}
		result = r
	}
	_, _ = c.out.append(lineOwn, func(b []byte) []byte {
		if e != nil {
			return jsonrpc.AppendError(b, id, e)
		}
		return jsonrpc.AppendResult(b, id, result)
	})
}
