package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/exitsig"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/telemetry"
)

// ServerRequest is a request the server sent to the client: Method, Params
// (raw JSON) and ID. In the legacy era ID is the server's JSON-RPC id; in
// the modern era, where the request is one entry of an input_required
// result's inputRequests, ID is that entry's key as a JSON string (the
// key "name" gives the ID "\"name\"").
//
// It is the handlers layer's type, so these methods are listed here:
//
//	func (r *ServerRequest) Sampling() (*handlers.CreateMessageParams, error)  // sampling/createMessage params
//	func (r *ServerRequest) Elicitation() (*handlers.ElicitParams, error)      // elicitation/create params
//
// Each error, for another method or malformed params, is a -32602 *Error a
// handler can return as it is.
type ServerRequest = handlers.Request

// ServerRequestHandler answers server-to-client requests. A returned value
// is marshalled as the result; a returned *Error is sent as that error;
// any other error, or a panic, is answered with -32603. ctx is cancelled
// when the server cancels the request (legacy era), when the call that
// received the input request stops waiting (modern era: its ctx or its
// timeout), or when the connection stops; the answer is then never sent.
//
// A handler decodes params with req.Elicitation() or req.Sampling()
// (roots/list has none) and returns the matching result; the same handler
// serves both eras. For example:
//
//	func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
//		switch req.Method {
//		case "elicitation/create":
//			p, err := req.Elicitation()
//			if err != nil {
//				return nil, err // -32602, as the server should hear it
//			}
//			return &handlers.ElicitResult{Action: "accept", Content: askUser(p)}, nil
//		case "roots/list":
//			return &handlers.ListRootsResult{Roots: []handlers.Root{{URI: "file:///work", Name: "work"}}}, nil
//		}
//		return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: req.Method}
//	}
//
// An accepted form answer is checked against the requested schema before
// it is sent (ElicitParams.Check): a missing required field, a value of
// the wrong type (null included), out of range or not among the enum's
// values, or a field the schema does not name that holds anything but a
// string, a number, a boolean or an array of strings is answered with
// -32603 instead, and in the modern era fails the call with
// ErrInputRequest.
type ServerRequestHandler = handlers.Func

// Client is a connection to one MCP server running as a child process.
// All its methods are safe for concurrent use by any number of goroutines
// and actors. The typed MCP calls (ListTools, CallTool, ReadResource,
// GetPrompt, Complete, Ping, …) are the methods of its
// embedded Calls, shared with supervisor.Client and supervisor.Pool. Its
// PID also takes calls as messages (Call, ToolCall).
type Client struct {
	Calls                  // every typed call: ListTools, CallTool, ReadResource, …
	connected atomic.Bool  // Connect returned it: its owner is told when it stops
	calls     *callHandler // answers call messages sent to its PID
	conn      *engine.Conn
	lent      connseam.Lent // what conn lends the root (input rounds, probe retry, process id, kill)
	mcp       mcpState
	notes     *notifier     // the notification path (notifications.go)
	tasks     taskRegistry  // tasks polled on this connection, for their status notifications (tasks.go)
	listens   legacyListens // the legacy era's subscriptions, served by the client (listen.go)

	tel            *telemetry.Telemetry // tracer and instruments (telemetry.go)
	meters         *telemetry.Conn      // this client's measurements; nil when metrics are off
	site           site                 // where its requests are traced and measured (send)
	sessionVersion atomic.Pointer[string]
	era            atomic.Pointer[string] // for log records, once settled
}

// SetLoggingLevel asks the server for log messages (notifications/message)
// at level and above. Legacy era: a logging/setLevel request. Modern era,
// where that request no longer exists: every later request carries the
// level in its _meta, and nothing is sent now.
func (c *Client) SetLoggingLevel(ctx context.Context, level LoggingLevel) error {
	if !level.valid() {
		return fmt.Errorf("snodo: SetLoggingLevel: unknown level %q (use one of debug, info, notice, warning, error, critical, alert, emergency)", level)
	}
	if c.mcp.era == EraModern {
		c.setMeta(level)
		return nil
	}
	_, err := c.Calls.completeRequest(ctx, "logging/setLevel", map[string]any{"level": level}, nil)
	return err
}

// Notify writes a notification and returns once the line is written to
// the server's stdin. In the modern era params must be a JSON object (or
// nil), as for Request: any other value fails locally with -32602
// (ErrInvalidParams) and nothing is sent.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	tracing, metering := c.tel.Tracing(), c.meters.Live()
	if !tracing && !metering {
		return c.notify(ctx, method, params)
	}
	n := c.notificationStarted(ctx, method, tracing, metering)
	err := c.notify(n.ctx, method, params)
	n.end(err)
	return err
}

// notify sends a notification with the era's rule for params.
func (c *Client) notify(ctx context.Context, method string, params any) error {
	if c.mcp.era == EraModern && params != nil {
		p, err := jsonrpc.MarshalParams(method, params, "in the modern era")
		if err != nil {
			return err
		}
		params = json.RawMessage(p) // the connection passes it through
	}
	return c.conn.Notify(ctx, method, params)
}

// Close flushes what is already queued for the server, closes its stdin
// and returns without waiting for the server to exit. Requests in flight
// fail at once with -32000. Close never signals or kills the server; it
// is reaped when it exits. Idempotent; safe from any goroutine.
func (c *Client) Close() error { return c.conn.Close() }

// kill closes c as Close does, then stops its server for good as a
// failed Connect stops the server it gave up on: if the server has not
// exited 500 ms after its stdin was closed, its process group (it and
// the helpers it started) gets SIGTERM, and SIGKILL 500 ms later. It
// returns once the server is reaped: at once for a server that exits at
// EOF, after about 0.5 s for one that exits on SIGTERM, about 1 s for one
// that ignores both (and at most about 2 s more if something else keeps
// its output open). It is for a server the caller gives up on rather
// than closes, as the supervisor package does with the members of a pool
// that could not start and with a server it replaces; Close alone never
// signals (a caller of the library who wants a server stopped gives the
// client WithShutdownGrace). Safe from any goroutine, after Close too.
// Lent to package supervisor (connopts.Lent.Kill).
func (c *Client) kill() { c.lent.Kill(failedConnectGrace) }

// Done is closed once the server process has exited and the connection
// actor has stopped.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Err is why the connection stopped, nil while it runs.
func (c *Client) Err() error { return c.conn.Err() }

// PID is the connection actor. Any actor may stop it (Stop, Poison), which
// closes the connection; Exit stops it with a reason.
func (c *Client) PID() *protoactor.PID { return c.conn.PID() }

// ServerPID is the server's operating-system process id.
func (c *Client) ServerPID() int { return c.lent.ProcessID }

// Exit stops the connection actor pid with reason, like an exit signal:
// waiting callers get a -32000 *Error that wraps reason (errors.Is(err,
// reason)). It returns at once; a nil system or pid does nothing.
func Exit(system *protoactor.ActorSystem, pid *protoactor.PID, reason error) {
	exitsig.Send(system, pid, reason)
}
