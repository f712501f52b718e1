// Package connseam holds what package connection lends snodo's other
// packages (and their tests) without exporting it to users: functions
// package connection sets in its init, on a *connection.Conn passed as
// c. Nothing here is a user's to call, so nothing here counts as public
// surface.
package connseam

import (
	"context"
	"encoding/json"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/handlers"
)

var (
	// ServeInputs runs the server-request handler for the input requests
	// of one modern input_required result on c's one handler path and
	// returns their encoded results, in order (see
	// connection/input.go).
	ServeInputs func(c any, ctx context.Context, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error)

	// LeftInputUnread reports whether c's server went away without
	// reading everything written to its stdin: snodo.Connect restarts a
	// server that died of its probe only when this is false.
	LeftInputUnread func(c any) bool

	// ProcessID is c's server's operating-system process id; 0 for a
	// Streamable HTTP endpoint or when c is no *connection.Conn.
	ProcessID func(c any) int

	// System is the actor system c's actor runs on: Config.System, or
	// actor.Shared() when that was nil.
	System func(c any) *protoactor.ActorSystem

	// InFlight counts c's requests waiting for an answer.
	InFlight func(c any) int

	// Kill closes c and stops its server for good: SIGTERM to its
	// process group grace after its stdin was closed, SIGKILL another
	// grace later; it returns once the server was reaped (or about 2 s
	// after the SIGKILL). For a server given up on before it is used.
	Kill func(c any, grace time.Duration)
)

// CallOptions is the part of connection.CallOptions only the module sets:
// the connection embeds it unexported, so its fields are reachable as
// opts.Stream from package subscription yet absent from the connection
// package's documentation.
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
