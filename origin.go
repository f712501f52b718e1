package snodo

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/snodo/snodo/internal/origins"
)

// Origin says which server a message snodo sends to an actor comes from:
// every reply, progress update, notification, subscription event and end,
// and lifecycle message carries one, so an actor fed by several servers
// can tell them apart. It is an alias of an internal type, shared with
// package supervisor; its fields:
//
//	Server string // the server's name: WithOrigin's (for a supervisor, given in
//	              // supervisor.WithConnectOptions; default: the command; a servers
//	              // file gives each its name), empty for a plain client without it
//	Member string // the supervised client that served it: for a pool, the member
//	              // ("NAME#N"); for a supervised client, its name, the same as
//	              // Server; empty for a plain client without WithOrigin; the
//	              // supervisor.LifecycleEvent's Member and supervisor.Client.Origin's
type Origin = origins.Origin

// WithOrigin names the server in the messages the client sends to
// actors (their Origin): replies, progress, notifications through
// NotificationsTo, subscription events and its Closed. The supervisor
// package sets it on the connections it makes; give it to a plain client
// that shares an actor with others. Default: an empty Origin.
func WithOrigin(o Origin) Option {
	return func(c *config) error {
		if o.Member != "" && o.Server == "" {
			return errors.New("WithOrigin: a Member without a Server; set Server too")
		}
		c.mcp.origin = o
		return nil
	}
}

// originSlot is where a call message's run learns which client served it:
// the last client to send one of its requests records its Origin there.
type originSlot struct{ p atomic.Pointer[Origin] }

type originKey struct{}

// withOriginSlot gives ctx a slot that starts with fallback (the
// handler's own Origin: a pool's, before a member took the call).
func withOriginSlot(ctx context.Context, fallback Origin) (context.Context, *originSlot) {
	s := &originSlot{}
	s.p.Store(&fallback)
	return context.WithValue(ctx, originKey{}, s), s
}

func (s *originSlot) get() Origin { return *s.p.Load() }

// originFrom is the Origin recorded so far for ctx's call message.
func originFrom(ctx context.Context) Origin {
	if s, ok := ctx.Value(originKey{}).(*originSlot); ok {
		return s.get()
	}
	return Origin{}
}

// withOrigin puts o on a call message's reply (nil stays nil).
func withOrigin(reply any, o Origin) any {
	switch r := reply.(type) {
	case *Reply:
		r.Origin = o
	case *ToolReply:
		r.Origin = o
	case *ListenReply:
		r.Origin = o
	}
	return reply
}

// recordOrigin tells ctx's call message, if any, that c serves it.
func (c *Client) recordOrigin(ctx context.Context) {
	if s, ok := ctx.Value(originKey{}).(*originSlot); ok && c.mcp.origin != (Origin{}) {
		s.p.Store(&c.mcp.origin)
	}
}

type notifyOriginKey struct{}

// originOf is the Origin a notification handler's ctx carries (the
// client's), empty when none does.
func originOf(ctx context.Context) Origin {
	o, _ := ctx.Value(notifyOriginKey{}).(Origin)
	return o
}
