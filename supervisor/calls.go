package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Request sends a JSON-RPC request to the current server and returns the
// raw result; see snodo.Client.Request for the errors. It is raw, like
// snodo.Client.Request: an input_required result is returned as it is,
// and the typed calls (CallTool, ReadResource, GetPrompt) complete those
// rounds. During a restart it waits for the new server or fails fast
// (FailFast); a Timeout request option also bounds that wait, and the
// time waited counts against it. A call in flight when its server dies
// fails with -32000 (errors.Is snodo.ErrServerExited and the like)
// unless marked snodo.Idempotent; one the server went away without
// reading (snodo.ErrNotSent) is sent to the next server, as a call made
// during the restart (it waits for it, or fails fast with FailFast).
func (c *Client) Request(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error) {
	return call(ctx, c, method, opts, false, func(cl *snodo.Client, ro []snodo.RequestOption) (json.RawMessage, error) {
		return cl.Request(ctx, method, params, ro...)
	})
}

// Era is the era of the last server connected; "" before the first.
func (c *Client) Era() snodo.Era {
	if l := c.s.latest(); l != nil {
		return l.Era()
	}
	return ""
}

// inputHandling runs the input requests of a round on the current
// server's connection (waiting through a restart like Request), with the
// handler and bound given with WithConnectOptions.
func (c *Client) inputHandling() calls.InputHandling {
	return calls.InputHandling{Serve: c.serveInputs, MaxRounds: c.s.maxRounds()}
}

func (c *Client) serveInputs(ctx context.Context, reqs []*snodo.ServerRequest, timeout time.Duration) ([]json.RawMessage, error) {
	return call(ctx, c, inputMethod, nil, false, func(cl *snodo.Client, _ []snodo.RequestOption) ([]json.RawMessage, error) {
		return calls.Calls[snodo.RequestOption, snodo.Era](cl.Calls).Input()().Serve(ctx, reqs, timeout)
	})
}

// inputMethod names the answering of input requests in errors.
const inputMethod = "input requests"

// maxRounds is the WithMaxInputRounds bound of the connections.
func (s *state) maxRounds() int {
	if l := s.latest(); l != nil {
		return calls.Calls[snodo.RequestOption, snodo.Era](l.Calls).Input()().MaxRounds
	}
	return 0
}

// Notify sends a notification to the current server, waiting for a
// restart (or failing fast) like Request.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	_, err := call(ctx, c, method, nil, false, func(cl *snodo.Client, _ []snodo.RequestOption) (struct{}, error) {
		return struct{}{}, cl.Notify(ctx, method, params)
	})
	return err
}

// call runs fn on the current connection, with the wait, fail-fast and
// retry rules. reserved says the caller is a pool: it already counted the
// call in c's in-flight figure, and it retries on another member itself.
func call[T any](ctx context.Context, c *Client, method string, opts []snodo.RequestOption, reserved bool,
	fn func(*snodo.Client, []snodo.RequestOption) (T, error)) (T, error) {
	v, _, err := callSent(ctx, c, method, opts, reserved, fn)
	return v, err
}

// callSent is call, also saying whether fn ran on a connection: false
// when the call failed before reaching any server (supervision ended, a
// wait timed out, or its connection stopped without the server reading
// it: snodo.ErrNotSent), so that it can go elsewhere. Each fn sends at
// most one request, so ErrNotSent means that nothing of the call ran.
// Unless reserved (a pool moves such a call itself), a call not sent is
// sent to the next server (at most maxPoolSize times: a server that keeps
// dying unread is the restart intensity's business), as a call made
// during the restart is.
func callSent[T any](ctx context.Context, c *Client, method string, opts []snodo.RequestOption, reserved bool,
	fn func(*snodo.Client, []snodo.RequestOption) (T, error)) (T, bool, error) {
	if !reserved {
		c.s.inflight.Add(1)
	}
	defer c.s.release()
	cc := callConfig{opts: opts, Settings: calls.Of(opts)}
	t0 := time.Now()
	v, used, err := once(ctx, c, method, &cc, nil, t0, fn)
	for moved := 0; !reserved && used != nil && notSent(err) && ctx.Err() == nil && moved < maxPoolSize; moved++ {
		c.s.cfg.logger.Debug("supervisor: the server went away without reading the call; sending it to the next server", "method", method, "error", err)
		rc := cc // what is left of the caller's Timeout bounds the wait and the call
		if cc.Timeout > 0 {
			rc.Timeout, rc.opts = remaining(cc.Timeout, t0), remainingOpts(cc.opts, cc.Timeout, t0)
		}
		var next *snodo.Client
		if v, next, err = once(ctx, c, method, &rc, used, time.Now(), fn); next != nil {
			used = next
		}
	}
	if err != nil && cc.Idempotent && !reserved && used != nil && lostConnection(err) && ctx.Err() == nil {
		c.s.cfg.logger.Debug("supervisor: retrying an idempotent call on the next server", "method", method, "error", err)
		v, err = retryOnce(ctx, c, method, &cc, used, fn)
	}
	return v, used != nil && !notSent(err), err
}

// notSent reports whether err is a call's failure on a connection that
// stopped without its server reading the call: it can go to another
// server, Idempotent or not.
func notSent(err error) bool { return err != nil && errors.Is(err, snodo.ErrNotSent) }

// callConfig is one call's options and what they say.
type callConfig struct {
	calls.Settings[snodo.Progress, snodo.TaskStatus]
	opts []snodo.RequestOption
}

func retryOnce[T any](ctx context.Context, c *Client, method string, cc *callConfig, used *snodo.Client,
	fn func(*snodo.Client, []snodo.RequestOption) (T, error)) (T, error) {
	// The retry waits for the next server even with FailFast: the caller
	// asked for it.
	wait := *c.s.cfg
	wait.failFast = false
	v, _, err := onceWith(ctx, c.s, &wait, method, cc, used, time.Now(), fn)
	return v, err
}

func once[T any](ctx context.Context, c *Client, method string, cc *callConfig, prev *snodo.Client, t0 time.Time,
	fn func(*snodo.Client, []snodo.RequestOption) (T, error)) (T, *snodo.Client, error) {
	return onceWith(ctx, c.s, c.s.cfg, method, cc, prev, t0, fn)
}

// onceWith acquires a connection other than prev and runs fn on it. It
// returns the connection used (nil when none was acquired).
func onceWith[T any](ctx context.Context, s *state, cfg *config, method string, cc *callConfig, prev *snodo.Client, t0 time.Time,
	fn func(*snodo.Client, []snodo.RequestOption) (T, error)) (T, *snodo.Client, error) {
	var zero T
	limit := cfg.maxWait
	timeout := cc.Timeout
	switch {
	case timeout > 0:
		limit = timeout
	case timeout < 0:
		limit = 0 // only ctx bounds the wait
	}
	cl, err := s.acquire(ctx, method, prev, !cfg.failFast, limit)
	if err != nil {
		return zero, nil, err
	}
	ro := cc.opts
	if waited := time.Since(t0); timeout > 0 && waited > time.Millisecond {
		// The wait counts against the caller's own timeout.
		ro = append(append([]snodo.RequestOption(nil), ro...), snodo.Timeout(max(timeout-waited, time.Millisecond)))
	}
	v, err := fn(cl, ro)
	return v, cl, err
}

// acquire returns a running connection other than prev. Unless wait, it
// fails at once during a restart; otherwise it waits for at most limit
// (0: no limit but ctx).
func (s *state) acquire(ctx context.Context, method string, prev *snodo.Client, wait bool, limit time.Duration) (*snodo.Client, error) {
	var expired <-chan time.Time
	t0 := time.Now()
	for {
		s.mu.Lock()
		if s.ended {
			reason := s.owned.Reason()
			s.mu.Unlock()
			return nil, jsonrpc.ClosedError(reason)
		}
		if c := s.client; c != nil && c != prev && c.Err() == nil {
			s.mu.Unlock()
			return c, nil
		}
		if !wait {
			last, next := s.lastExit, s.nextTry
			if last == nil && s.client != nil {
				last = s.client.Err() // died; the supervisor has not seen it yet
			}
			s.mu.Unlock()
			return nil, restartingError(last, next)
		}
		changed := s.changed
		s.mu.Unlock()
		if expired == nil && limit > 0 {
			t := time.NewTimer(limit)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-expired:
			return nil, waitTimeoutError(method, time.Since(t0))
		}
	}
}
