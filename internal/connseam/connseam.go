// Package connseam holds, with real types, what the engine
// (internal/engine) lends snodo's other packages (and their tests) without exporting it to
// users: the part of a request's options only the module sets
// (CallOptions, embedded unexported in engine.CallOptions), and what
// one connection lends the code that started it (Lent, filled in by
// engine.Start when the config's Lend points at one). Nothing here is
// a user's to call, so nothing here counts as public surface.
package connseam

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snodo/snodo/handlers"
)

// Lent is what one connection lends the code that started it: set
// engine.Config's Lend (a field of the config's part only the module
// sets) to a *Lent, and engine.Start fills it in before it returns.
type Lent struct {
	// ProcessID is the server's operating-system process id; 0 for a
	// server reached through a Transport (Streamable HTTP, in memory…).
	ProcessID int

	// ServeInputs runs the server-request handler for the input requests
	// of one modern input_required result on the connection's one
	// handler path and returns their encoded results, in order (see
	// internal/engine/input.go).
	ServeInputs func(ctx context.Context, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error)

	// LeftInputUnread reports whether the server went away without
	// reading everything written to its stdin: snodo.Connect restarts a
	// server that died of its probe only when this is false.
	LeftInputUnread func() bool

	// InFlight counts the connection's requests waiting for an answer
	// (tests check that none is left behind).
	InFlight func() int

	// Kill closes the connection and stops its server for good: SIGTERM
	// to its process group grace after its stdin was closed, SIGKILL
	// another grace later; it returns once the server was reaped (or
	// about 2 s after the SIGKILL). For a server given up on before it
	// is used.
	Kill func(grace time.Duration)
}

// CallOptions is the part of engine.CallOptions only the module sets:
// the connection embeds it unexported, so its fields are reachable as
// opts.Stream from internal/substream, and by no one outside the
// module.
type CallOptions struct {
	// Stream receives the notifications the server correlates to the
	// request through _meta["io.modelcontextprotocol/subscriptionId"]
	// (subscriptions/listen). It runs on the reader goroutine, in order,
	// and must not block. If it panics, the panic is recovered and
	// logged, it is not called again, and the request ends with a local
	// -32603 (the server is sent notifications/cancelled).
	Stream func(method string, params json.RawMessage)

	// MetaKept says Meta's bytes never change (the Client's encoded
	// _meta): once checked, the connection keeps them as they are
	// instead of a copy to compare the next request's Meta with.
	MetaKept bool
}
