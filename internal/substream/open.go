package substream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
	"github.com/snodo/snodo/internal/sentinel"
)

// method is the request that opens a subscription.
const method = mcpmethod.Listen

// Open sends subscriptions/listen with params (which must carry the
// "notifications" filter) and meta, the encoded _meta the protocol era
// requires (nil: none; the connection adds it to params' own _meta), and
// returns once the server acknowledged it. ctx is the subscription's
// owner: when it is done the subscription is cancelled on the server and
// ends with snodo.ErrOwnerExited.
//
// snodo.Client.Listen is built on Open: the acknowledgement, the bounded
// queue and the owner link are the protocol's rules, not the caller's.
//
// Open fails, and leaves nothing running, when the server answers the
// request (error or result) before acknowledging it, when the connection
// stops, when ctx is done first, or when no acknowledgement came within
// Options.AckTimeout (a local -32001: the request is cancelled on the
// server). A nil ctx or conn is an error, and nothing is started.
func Open(ctx context.Context, conn *engine.Conn, params json.RawMessage, meta []byte, opts Options) (*Subscription, error) {
	if ctx == nil {
		return nil, fmt.Errorf("snodo: %s: nil context.Context; pass context.Background() or a ctx that owns the subscription", method)
	}
	if conn == nil {
		return nil, fmt.Errorf("snodo: %s: nil *engine.Conn; pass the connection to listen on (engine.Start)", method)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Actor != nil {
		if opts.System == nil {
			opts.System = conn.System()
		}
		if _, ok := opts.System.ProcessRegistry.Get(opts.Actor); !ok {
			return nil, fmt.Errorf("snodo: %s: %w: actor %s does not exist (has it stopped? is it in another actor system?)",
				method, sentinel.ErrOwnerExited, opts.Actor.Id)
		}
	}
	subCtx, cancel := context.WithCancelCause(ctx)
	s := &Subscription{
		opts:   opts,
		cancel: cancel,
		acked:  make(chan struct{}),
		done:   make(chan struct{}),
		events: make(chan Event, opts.MaxQueue),
	}
	if opts.Actor != nil {
		s.stopWatch = watchOwner(s)
		go s.pump()
	}
	go s.run(subCtx, conn, params, meta)
	var expired <-chan time.Time
	if opts.AckTimeout > 0 {
		t := time.NewTimer(opts.AckTimeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-s.acked:
		return s, nil
	case <-expired:
		s.mu.Lock()
		acked := s.isAcked
		s.abandoned = !acked // so Open fails as a whole: no end message, no events
		s.mu.Unlock()
		if acked { // it came as the time was up
			return s, nil
		}
		err := jsonrpc.NewLocalError(jsonrpc.CodeTimeout,
			fmt.Sprintf("%s: the server did not acknowledge the subscription within %s (it does not follow the MCP subscriptions protocol, or needs longer: raise the timeout)", method, opts.AckTimeout),
			jsonrpc.ErrTimeout)
		s.end(err) // cancels the request: notifications/cancelled, then Done
		<-s.done
		return nil, err // a local error says "snodo:" itself
	case <-s.done:
		select {
		case <-s.acked: // acknowledged, then ended at once: the caller sees the end
			return s, nil
		default:
		}
		if err := s.Err(); err != nil {
			return nil, fmt.Errorf("snodo: %s ended before the server acknowledged it: %w", method, err)
		}
		return nil, fmt.Errorf("snodo: the server answered %s without acknowledging it first; it does not follow the MCP subscriptions protocol", method)
	}
}

// run makes the listen request and ends the subscription when it returns.
func (s *Subscription) run(ctx context.Context, conn *engine.Conn, params json.RawMessage, meta []byte) {
	if ctx.Err() != nil { // the owner is already gone: send nothing
		s.finish(endReason(ctx))
		return
	}
	if s.opts.Serve != nil { // the root's legacy-era Listen: no listen request
		err := s.opts.Serve(ctx, s.sink)
		if ctx.Err() != nil {
			err = endReason(ctx)
		}
		s.finish(err)
		return
	}
	opts := &engine.CallOptions{
		Timeout: -1,
		Meta:    meta,
		Sent:    func(id int64) { s.id.Store(id) },
	}
	opts.Stream = s.sink
	_, err := conn.Request(ctx, method, params, opts)
	if err != nil && ctx.Err() != nil {
		err = endReason(ctx)
	}
	s.finish(err)
}

// endReason says why ctx was cancelled: a reason set by this package, or
// the owner context's end.
func endReason(ctx context.Context) error {
	cause := context.Cause(ctx)
	var le *localEnd
	if errors.As(cause, &le) {
		return le.err
	}
	return fmt.Errorf("%w: the context given to Listen is done: %w", sentinel.ErrOwnerExited, cause)
}

// finish records err, closes the queue after the last event and closes
// Done. It runs once, on the request goroutine.
func (s *Subscription) finish(err error) {
	s.mu.Lock()
	s.ended = true
	s.err = err
	close(s.events)
	s.mu.Unlock()
	s.cancel(nil)
	if s.stopWatch != nil {
		s.stopWatch()
	}
	if s.opts.Ended != nil {
		s.opts.Ended(s.ID(), err)
	}
	close(s.done)
}
