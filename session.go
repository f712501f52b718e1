package snodo

import (
	"context"
	"encoding/json"
)

// Session is one MCP server however it is reached, so that code is
// written once for all of them: a plain *Client, a supervised client or
// a pool (package supervisor), or a remote client served over NATS
// (package remote). Each kind keeps its own extra methods (a pool's Grow,
// a supervised client's Restarts) on its own type.
//
// Every Listen returns the one *Subscription, whoever serves it. A
// remote client refuses Notify: notifications are its host's
// connection's own.
type Session interface {
	// Request sends one request and returns its raw result; see Client.Request.
	Request(ctx context.Context, method string, params any, opts ...RequestOption) (json.RawMessage, error)
	// Era is the MCP era of the server(s) behind the session: "" while
	// it is not known yet.
	Era() Era

	ListTools(ctx context.Context, opts ...RequestOption) ([]Tool, error)
	CallTool(ctx context.Context, name string, args any, opts ...RequestOption) (*CallToolResult, error)
	// CallToolAsTask runs a tool call as a task; see Calls.CallToolAsTask.
	// A supervised client or a pool keeps the task on its server, a remote
	// client on the host and pool member that created it.
	CallToolAsTask(ctx context.Context, name string, args any, opts ...RequestOption) (*Task, error)
	ListResources(ctx context.Context, opts ...RequestOption) ([]Resource, error)
	ListResourceTemplates(ctx context.Context, opts ...RequestOption) ([]ResourceTemplate, error)
	ReadResource(ctx context.Context, uri string, opts ...RequestOption) (*ReadResourceResult, error)
	ListPrompts(ctx context.Context, opts ...RequestOption) ([]Prompt, error)
	GetPrompt(ctx context.Context, name string, args map[string]string, opts ...RequestOption) (*GetPromptResult, error)
	Complete(ctx context.Context, req CompleteRequest, opts ...RequestOption) (*Completion, error)
	Ping(ctx context.Context, opts ...RequestOption) error

	// Notify sends a notification (no answer comes).
	Notify(ctx context.Context, method string, params any) error
	// Listen opens a subscriptions/listen stream; see Client.Listen.
	Listen(ctx context.Context, f Filter, opts ...ListenOption) (*Subscription, error)
	// Close ends the session; see each kind's Close.
	Close() error
}

var _ Session = (*Client)(nil)
