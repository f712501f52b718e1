package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Dispatcher runs the handlers of one connection's server requests
// (legacy era) and input requests (modern era), each in a child actor of
// the connection actor, at most Config.Max at once: Dispatch and Inputs
// are the two doors to the one path.
//
// Every method must be called on the connection actor's goroutine, with
// that actor's context: the dispatcher's tables have no lock because they
// have exactly one user.
type Dispatcher struct {
	cfg Config
	// running and byChild are made as the first handler starts: a
	// connection whose server never asks keeps neither.
	running map[string]*slot // by the request's raw id
	byChild map[string]*slot // by the child actor's id, for Terminated
	waiting []*Input         // input requests waiting for a slot, oldest first
	inputs  uint64           // numbers the input requests' slots
	stopped bool
}

// slot is one running handler: a place in the bound until its child stops.
type slot struct {
	id     string // the request's raw id, or "#n" for an input request
	cancel context.CancelFunc
}

// NewDispatcher returns a dispatcher for one connection.
func NewDispatcher(cfg Config) *Dispatcher {
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = DefaultMaxWaiting
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{cfg: cfg}
}

// Running counts the handlers that hold a slot of the bound.
func (d *Dispatcher) Running() int { return len(d.running) }

// Waiting counts the input requests waiting for a slot.
func (d *Dispatcher) Waiting() int { return len(d.waiting) }

// Dispatch answers req at once when it is malformed, unhandled or over
// the bound, and otherwise spawns a child of ctx's actor to run the
// handler. It never blocks.
func (d *Dispatcher) Dispatch(ctx protoactor.Context, req *handlers.Request) {
	if d.stopped {
		return // the connection is going away; nothing may be answered
	}
	if !validID(req.ID) {
		d.cfg.Logger.Warn("snodo: answered a server request whose id is not a string or a number with -32600",
			"method", req.Method, "id", string(req.ID))
		d.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: the id must be a string or a number")
		return
	}
	if d.cfg.Handler == nil {
		d.reject(req.ID, jsonrpc.CodeMethodNotFound, "method not found: "+req.Method+" (this client has no server-request handler)")
		return
	}
	if !validParams(req.Params) {
		d.reject(req.ID, jsonrpc.CodeInvalidParams, "invalid params: "+req.Method+" needs params that are a JSON object or array")
		return
	}
	key := string(req.ID)
	if d.running[key] != nil {
		d.reject(req.ID, jsonrpc.CodeInvalidRequest, "invalid request: id "+key+" belongs to a request still being handled; use a new id")
		return
	}
	if len(d.running) >= d.cfg.Max {
		d.cfg.Logger.Warn("snodo: a server request came over the bound of handlers running at once; answered -32603 without running it",
			"method", req.Method, "id", key, "max_server_requests", d.cfg.Max)
		if d.cfg.Refused != nil {
			d.cfg.Refused()
		}
		d.reject(req.ID, jsonrpc.CodeInternalError, "server request rejected: the client is already handling "+
			strconv.Itoa(d.cfg.Max)+" requests (its limit); retry after one completes")
		return
	}
	hctx, cancel := context.WithCancel(context.Background())
	d.spawn(ctx, key, req, hctx, cancel, func(o *outcome) { d.cfg.Respond(req.ID, o.result, o.err) })
}

// Inputs runs the handler for each input request of a modern
// input_required result: at once while the bound has room, otherwise
// after every input request that came before it (FIFO). An input whose
// Ctx is done by its turn is skipped; one beyond Config.MaxWaiting
// waiting inputs is answered at once with an error. It never blocks.
func (d *Dispatcher) Inputs(ctx protoactor.Context, ins []*Input) {
	if d.stopped {
		return // the caller sees the connection stop
	}
	for _, in := range ins {
		switch {
		case in.Ctx.Err() != nil:
		case len(d.waiting) == 0 && len(d.running) < d.cfg.Max:
			d.startInput(ctx, in)
		case len(d.waiting) >= d.cfg.MaxWaiting:
			if d.cfg.Refused != nil {
				d.cfg.Refused()
			}
			d.cfg.Logger.Warn("snodo: an input request came over the bound of input requests waiting for a handler; failed its call",
				"method", in.Request.Method, "key", string(in.Request.ID), "max_waiting", d.cfg.MaxWaiting)
			in.Reply(nil, fmt.Errorf("%d input requests already wait for one of the %d handler slots (WithMaxServerRequests); retry later",
				d.cfg.MaxWaiting, d.cfg.Max))
		default:
			d.waiting = append(d.waiting, in)
		}
	}
}

// Withdraw removes the given inputs from the waiting line: their call
// stopped waiting (an answer failed, its ctx is done). Inputs already
// running are cancelled through their Ctx, not here.
func (d *Dispatcher) Withdraw(_ protoactor.Context, ins []*Input) {
	if len(d.waiting) == 0 {
		return
	}
	gone := make(map[*Input]bool, len(ins))
	for _, in := range ins {
		gone[in] = true
	}
	d.waiting = slices.DeleteFunc(d.waiting, func(in *Input) bool { return gone[in] })
}

func (d *Dispatcher) startInput(ctx protoactor.Context, in *Input) {
	d.inputs++
	key := "#" + strconv.FormatUint(d.inputs, 10) // never a JSON id: no clash with server requests
	hctx, cancel := context.WithCancel(in.Ctx)
	d.spawn(ctx, key, in.Request, hctx, cancel, func(o *outcome) {
		if o.err != nil {
			in.Reply(nil, o.cause)
			return
		}
		in.Reply(o.result, nil)
	})
}

// spawn takes a slot and starts the child actor that runs the handler:
// the one way a handler starts, whatever the era.
func (d *Dispatcher) spawn(ctx protoactor.Context, key string, req *handlers.Request, hctx context.Context, cancel context.CancelFunc, deliver func(*outcome)) {
	c := &child{cfg: &d.cfg, req: req, ctx: hctx, cancel: cancel, deliver: deliver}
	pid := ctx.SpawnPrefix(protoactor.PropsFromProducer(func() protoactor.Actor { return c }), "request")
	s := &slot{id: key, cancel: cancel}
	if d.running == nil {
		d.running, d.byChild = make(map[string]*slot), make(map[string]*slot)
	}
	d.running[key] = s
	d.byChild[pid.Id] = s
}

// next starts waiting inputs while the bound has room.
func (d *Dispatcher) next(ctx protoactor.Context) {
	for len(d.waiting) > 0 && len(d.running) < d.cfg.Max {
		in := d.waiting[0]
		d.waiting[0] = nil
		d.waiting = d.waiting[1:]
		if in.Ctx.Err() == nil {
			d.startInput(ctx, in)
		}
	}
	if len(d.waiting) == 0 {
		d.waiting = nil // let the backing array go
	}
}

// Cancel cancels the handler of the server request id, if it runs: the
// server sent notifications/cancelled for it. Its answer is never sent;
// its slot frees when the handler returns.
func (d *Dispatcher) Cancel(_ protoactor.Context, id json.RawMessage) {
	s := d.running[string(id)]
	if s == nil {
		d.cfg.Logger.Debug("snodo: the server cancelled a request that is not being handled (finished, rejected or unknown)",
			"id", string(id))
		return
	}
	s.cancel()
}

// Stop cancels every running handler as the connection stops; their
// answers are never written. It does not wait: protoactor-go stops the
// children after the parent's Stopping, and a child's Receive never
// blocks on its handler, so the connection's stop never waits on user
// code.
func (d *Dispatcher) Stop(protoactor.Context) {
	d.stopped = true
	d.waiting = nil // their calls see the connection stop
	for _, s := range d.running {
		s.cancel()
	}
}

// Receive handles the dispatcher's own messages — a child's Terminated,
// which frees its slot for the oldest waiting input — and reports whether
// the message was one.
func (d *Dispatcher) Receive(ctx protoactor.Context) bool {
	t, ok := ctx.Message().(*protoactor.Terminated)
	if !ok || t.Who == nil {
		return false
	}
	s := d.byChild[t.Who.Id]
	if s == nil {
		return false
	}
	delete(d.byChild, t.Who.Id)
	delete(d.running, s.id)
	s.cancel() // releases the context's resources
	if !d.stopped {
		d.next(ctx)
	}
	return true
}

func (d *Dispatcher) reject(id json.RawMessage, code int, msg string) {
	d.cfg.Respond(id, nil, &jsonrpc.Error{Code: code, Message: msg})
}

// validID: JSON-RPC ids are strings or numbers (MCP also forbids null).
// The scanner has already checked the syntax, so the first byte decides.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// validParams: params, when present, must be structured (JSON-RPC 2.0 §4.2).
func validParams(p json.RawMessage) bool {
	return len(p) == 0 || p[0] == '{' || p[0] == '['
}
