package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/jsonrpc"
)

// Request is a request the server sent to the client.
type Request struct {
	ID     json.RawMessage // the server's id, raw JSON (number or string)
	Method string
	Params json.RawMessage
}

// Func answers one server request. A returned value is marshalled as the
// result; a returned *jsonrpc.Error is sent as that error; any other error,
// or a panic, is answered with -32603. ctx is cancelled when the server
// cancels the request or the connection stops; the answer is then dropped.
type Func func(ctx context.Context, req *Request) (any, error)

// Responder writes the answer to a server request: result (raw JSON) when
// err is nil, otherwise err. It must not block.
type Responder func(id json.RawMessage, result json.RawMessage, err *jsonrpc.Error)

// Config configures a Dispatcher.
type Config struct {
	Handler Func         // nil: every request is answered with -32601
	Max     int          // handlers running at once
	Respond Responder    // writes answers
	Logger  *slog.Logger // never nil
}

// Dispatcher runs server-request handlers for one connection. All its
// methods are called on the connection actor.
type Dispatcher struct {
	cfg Config
}

// NewDispatcher returns a dispatcher for one connection.
func NewDispatcher(cfg Config) *Dispatcher { return &Dispatcher{cfg: cfg} }

// Dispatch starts handling req. It never blocks.
func (d *Dispatcher) Dispatch(ctx protoactor.Context, req *Request) {
	if d.cfg.Handler == nil {
		d.cfg.Respond(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method})
		return
	}
	// Placeholder until the actor-based, bounded implementation lands.
	go func() {
		res, err := d.cfg.Handler(context.Background(), req)
		result, rerr := encode(res, err)
		d.cfg.Respond(req.ID, result, rerr)
	}()
}

func encode(res any, err error) (json.RawMessage, *jsonrpc.Error) {
	if err != nil {
		var e *jsonrpc.Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("handler result cannot be marshalled: %v", merr)}
	}
	return b, nil
}

// Cancel cancels the handler for the server request id, if it runs.
func (d *Dispatcher) Cancel(ctx protoactor.Context, id json.RawMessage) {}

// Stop cancels every running handler; their answers are never written.
func (d *Dispatcher) Stop(ctx protoactor.Context) {}

// Receive handles the dispatcher's own messages (its children's results);
// it reports whether the message was one of them.
func (d *Dispatcher) Receive(ctx protoactor.Context) bool { return false }
