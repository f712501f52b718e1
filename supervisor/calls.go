package supervisor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
)

// CallOption tunes one call through a supervised client or a pool.
type CallOption func(*callConfig)

type callConfig struct {
	idempotent bool
	opts       []snodo.RequestOption
}

// Idempotent marks a call as safe to run twice: if its server goes away
// while it is in flight, it is sent once more to the next server (the
// restarted one, or another pool member) instead of failing with -32000.
// Calls not so marked are never retried: a request may have run on the
// server before it died.
func Idempotent() CallOption {
	return func(c *callConfig) { c.idempotent = true }
}

// RequestOptions passes snodo request options (Timeout, OnProgress…) to
// the call. A Timeout also bounds the wait for a restart, and the time
// waited counts against it.
func RequestOptions(opts ...snodo.RequestOption) CallOption {
	return func(c *callConfig) { c.opts = append(c.opts, opts...) }
}

func callConfigOf(opts []CallOption) callConfig {
	var cc callConfig
	for _, o := range opts {
		o(&cc)
	}
	return cc
}

// timeout is the call's Timeout request option: 0 when it gives none.
func (cc *callConfig) timeout() time.Duration {
	var o connection.CallOptions
	for _, opt := range cc.opts {
		opt(&o)
	}
	return o.Timeout
}

// Request sends a JSON-RPC request to the current server and returns the
// raw result; see snodo.Client.Request for the errors. During a restart
// it waits for the new server or fails fast (FailFast). A call in flight
// when its server dies fails with -32000 (errors.Is snodo.ErrServerExited
// and the like) unless marked Idempotent.
func (c *Client) Request(ctx context.Context, method string, params any, opts ...CallOption) (json.RawMessage, error) {
	return call(ctx, c, method, callConfigOf(opts), false, func(cl *snodo.Client, ro []snodo.RequestOption) (json.RawMessage, error) {
		return cl.Request(ctx, method, params, ro...)
	})
}

// CallTool calls the tool name with args on the current server; see
// snodo.Client.CallTool and Request.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*snodo.CallToolResult, error) {
	return call(ctx, c, "tools/call", callConfigOf(opts), false, func(cl *snodo.Client, ro []snodo.RequestOption) (*snodo.CallToolResult, error) {
		return cl.CallTool(ctx, name, args, ro...)
	})
}

// ListTools lists the current server's tools; see snodo.Client.ListTools.
func (c *Client) ListTools(ctx context.Context, opts ...CallOption) ([]snodo.Tool, error) {
	return call(ctx, c, "tools/list", callConfigOf(opts), false, func(cl *snodo.Client, ro []snodo.RequestOption) ([]snodo.Tool, error) {
		return cl.ListTools(ctx, ro...)
	})
}

// Notify sends a notification to the current server, waiting for a
// restart (or failing fast) like Request.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	_, err := call(ctx, c, method, callConfig{}, false, func(cl *snodo.Client, _ []snodo.RequestOption) (struct{}, error) {
		return struct{}{}, cl.Notify(ctx, method, params)
	})
	return err
}

// call runs fn on the current connection, with the wait, fail-fast and
// retry rules. reserved says the caller (a pool) already counted the
// call in c's in-flight figure.
func call[T any](ctx context.Context, c *Client, method string, cc callConfig, reserved bool,
	fn func(*snodo.Client, []snodo.RequestOption) (T, error)) (T, error) {
	if !reserved {
		c.s.inflight.Add(1)
	}
	defer c.s.inflight.Add(-1)
	v, used, err := once(ctx, c, method, &cc, nil, time.Now(), fn)
	if err != nil && cc.idempotent && used != nil && lostConnection(err) && ctx.Err() == nil {
		c.s.cfg.logger.Debug("supervisor: retrying an idempotent call on the next server", "method", method, "error", err)
		return retryOnce(ctx, c, method, &cc, used, fn)
	}
	return v, err
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
	timeout := cc.timeout()
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
			reason := s.reason
			s.mu.Unlock()
			return nil, closedError(reason)
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
