package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
)

// InputError is the failure of one input request of a round: Index is
// its place among the round's requests, Err what its handler returned
// (or why it could not run).
type InputError struct {
	Index int
	Err   error
}

// Error is the message of what the handler returned.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns what the handler returned, for errors.Is and errors.As.
func (e *InputError) Unwrap() error { return e.Err }

// Round is the one waiter for the answers to the input requests of one
// modern input_required result, whoever runs their handlers: the
// connection's child actors (Dispatcher.Inputs) or, for a client with no
// connection to run them on, goroutines (Serve). Build it with NewRound,
// hand each request's Reply to whatever runs it, then Wait.
type Round struct {
	ctx     context.Context // the handlers'; cancelled when the wait ends
	cancel  context.CancelFunc
	replies chan roundReply // one slot per request: a Reply never blocks
	n       int
}

type roundReply struct {
	i      int
	result json.RawMessage
	err    error
}

// NewRound starts a round of n input requests waited for under ctx. The
// handlers' context, Ctx, derives from ctx and is cancelled when Wait
// returns.
func NewRound(ctx context.Context, n int) *Round {
	rctx, cancel := context.WithCancel(ctx)
	return &Round{ctx: rctx, cancel: cancel, replies: make(chan roundReply, n), n: n}
}

// Ctx is the context the round's handlers run under.
func (r *Round) Ctx() context.Context { return r.ctx }

// Reply returns the answer function of the i-th request: it never blocks
// and is called at most once.
func (r *Round) Reply(i int) func(result json.RawMessage, err error) {
	return func(result json.RawMessage, err error) { r.replies <- roundReply{i, result, err} }
}

// Wait returns the encoded results in the requests' order. It ends early
// with the first failure (an *InputError naming the request), with ctx
// (an error wrapping ctx's), after timeout when it is positive (a local
// -32001 wrapping jsonrpc.ErrTimeout), or when stopped closes (stop's
// error). Either way the handlers' context is cancelled as it returns.
func (r *Round) Wait(ctx context.Context, timeout time.Duration, stopped <-chan struct{}, stop func() error) ([]json.RawMessage, error) {
	defer r.cancel()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	results := make([]json.RawMessage, r.n)
	for range r.n {
		select {
		case rep := <-r.replies:
			if rep.err != nil {
				return nil, &InputError{Index: rep.i, Err: rep.err}
			}
			results[rep.i] = rep.result
		case <-ctx.Done():
			return nil, fmt.Errorf("snodo: waiting for the handler of %d input request(s): %w", r.n, ctx.Err())
		case <-expired:
			return nil, jsonrpc.NewLocalError(jsonrpc.CodeTimeout,
				fmt.Sprintf("the handlers of %d input request(s) did not answer within %s; raise it with the Timeout request option or WithTimeout",
					r.n, timeout), jsonrpc.ErrTimeout)
		case <-stopped:
			return nil, stop()
		}
	}
	return results, nil
}

// Serve answers the input requests of one round by running h for each
// at once, on goroutines of its own, for a client that has no connection
// to run them on (a client on another machine). Each run goes through
// the one handler path of the connection's (call: a panic is an error,
// an accepted elicitation form that does not fit its schema is refused);
// h is given Defaults. A nil logger discards. The round ends as
// Round.Wait says, with no stop of its own; a handler that ignores its
// cancelled ctx keeps only its goroutine.
func Serve(ctx context.Context, h handlers.Func, logger *slog.Logger, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := NewRound(ctx, len(reqs))
	cfg := &Config{Handler: Defaults(h), Logger: logger}
	for i, req := range reqs {
		reply := r.Reply(i)
		go func() {
			out := call(cfg, r.Ctx(), req)
			if out.err != nil {
				reply(nil, out.cause)
				return
			}
			reply(out.result, nil)
		}()
	}
	return r.Wait(ctx, timeout, nil, nil)
}

// Defaults is h answering what every client answers the same way: ping
// with an empty result, and, when h is nil, every other request with
// -32601.
func Defaults(h handlers.Func) handlers.Func {
	return func(ctx context.Context, req *handlers.Request) (any, error) {
		if req.Method == mcpmethod.Ping {
			return struct{}{}, nil
		}
		if h == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: "method not found: " + req.Method + " (the client has no server-request handler)"}
		}
		return h(ctx, req)
	}
}
