package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// Typed MCP calls, on Calls: see Calls for what they share, errors
// included.

// ListTools returns every tool the server offers, following nextCursor
// across pages (at most MaxPages of them).
func (c Calls) ListTools(ctx context.Context, opts ...RequestOption) ([]Tool, error) {
	return collect(pages[Tool](ctx, c, "tools/list", "tools", opts))
}

// ListResources returns every resource the server lists, following
// nextCursor across pages.
func (c Calls) ListResources(ctx context.Context, opts ...RequestOption) ([]Resource, error) {
	return collect(pages[Resource](ctx, c, "resources/list", "resources", opts))
}

// ListResourceTemplates returns every resource template, following
// nextCursor across pages.
func (c Calls) ListResourceTemplates(ctx context.Context, opts ...RequestOption) ([]ResourceTemplate, error) {
	return collect(pages[ResourceTemplate](ctx, c, "resources/templates/list", "resourceTemplates", opts))
}

// ListPrompts returns every prompt the server offers, following
// nextCursor across pages.
func (c Calls) ListPrompts(ctx context.Context, opts ...RequestOption) ([]Prompt, error) {
	return collect(pages[Prompt](ctx, c, "prompts/list", "prompts", opts))
}

// CallTool calls the tool name with args (nil, a json.RawMessage or
// []byte of JSON, or anything that marshals to a JSON object; nil, a nil
// map or pointer, and an empty or null json.RawMessage or []byte send {}). Arguments that are no JSON
// object fail locally with a -32602 wrapping ErrInvalidParams, and
// nothing is sent; a *ToolCall message goes through the same check. A
// tool that failed is a result with IsError set, not an error. In the modern era, input the
// server asks for (input_required) is fulfilled by the server-request
// handler and the call is retried until it completes; the caller sees
// only the final result.
//
// A tool that runs as a task just works: when a legacy server that
// offers tasks refuses a plain call (an error, or a result with IsError
// that speaks of a task) to a tool it lists with taskSupport "required",
// the call is made again as a task, and a modern server that answers with a task (the tasks
// extension) is polled; CallTool waits for the task's result, with
// OnTaskStatus told of each status, and cancels the task on the server
// when ctx ends. A tool whose taskSupport is "optional" is called
// plainly; CallToolAsTask runs it as a task.
func (c Calls) CallTool(ctx context.Context, name string, args any, opts ...RequestOption) (*CallToolResult, error) {
	if pc, ok := c.modernTaskCalls(ctx); ok {
		return pc.CallTool(ctx, name, args, opts...) // a task must stay on the server that created it
	}
	box := new(callToolBox)
	var err error
	if box.params, err = callToolParams(name, args); err != nil {
		return nil, err
	}
	params := box.params // for a task, if the server wants one
	raw, rt, err := c.requestWithInputType(ctx, "tools/call", &box.params, opts)
	box.params = nil // sent: the result need not keep it alive
	if err == nil {
		if rt == resultTask {
			task, err := c.startTask(ctx, name, raw, opts)
			if err != nil {
				return nil, err
			}
			return task.waitOwned()
		}
		if err := decodeCallTool(raw, &box.res, box.one[:]); err != nil {
			return nil, malformedResult("tools/call "+name, err)
		}
	}
	if c.refusedForTask(&box.res, err) && c.toolRequiresTask(ctx, name, opts) {
		tc, terr := c.forTask(ctx)
		if terr != nil {
			return nil, terr
		}
		task, terr := tc.createTask(ctx, name, params, opts)
		if terr != nil {
			return nil, fmt.Errorf("snodo: tools/call %s, run as a task after the server refused a plain call: %w", name, terr)
		}
		return task.waitOwned()
	}
	if err != nil {
		return nil, err
	}
	return &box.res, nil
}

// callToolBox holds one CallTool's params and result in one allocation.
// The params travel as a pointer into it (a json.RawMessage put in an
// interface would cost one more), and a result of one content block, the
// usual case, takes the block from it.
type callToolBox struct {
	params json.RawMessage
	res    CallToolResult
	one    [1]Content
}

// callToolParams are the params of tools/call: the one check that the
// arguments are a JSON object (a local -32602 otherwise: nothing is sent)
// and never "arguments": null (TypeScript SDK servers, most published
// servers, reject it even for tools without parameters: no value sends
// {}). Arguments already encoded (json.RawMessage, []byte) are put in place as
// they are, in one allocation; the connection then checks the params as
// it checks every raw value (one valid JSON value, compacted onto one
// line if need be). Anything else is marshalled first.
func callToolParams(name string, args any) (json.RawMessage, error) {
	encoded, raw := args.(json.RawMessage)
	if b, ok := args.([]byte); ok { // raw JSON, as Request takes it, not base64
		encoded, raw = b, true
	}
	if !raw && !noValue(args) {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, jsonrpc.NewLocalError(CodeInvalidParams, fmt.Sprintf("tools/call %s: arguments cannot be marshalled (%v); nothing was sent: pass a struct, a map, or json.RawMessage(`{…}`)", name, err), ErrInvalidParams, err)
		}
		encoded = b
	}
	switch t := bytes.TrimSpace(encoded); {
	case len(t) == 0 || bytes.Equal(t, []byte("null")):
		encoded = json.RawMessage("{}")
	case t[0] != '{':
		if len(t) > 40 {
			t = append(t[:40:40], "…"...)
		}
		return nil, jsonrpc.NewLocalError(CodeInvalidParams, fmt.Sprintf("tools/call %s: arguments must be a JSON object, got %s; nothing was sent: pass a struct, a map, or json.RawMessage(`{…}`)", name, t), ErrInvalidParams)
	}
	p := make(json.RawMessage, 0, len(name)+len(encoded)+len(`{"name":"","arguments":}`))
	p = append(p, `{"name":`...)
	p = jsonrpc.AppendString(p, name)
	p = append(p, `,"arguments":`...)
	p = append(p, encoded...)
	return append(p, '}'), nil
}

// ReadResource reads the resource at uri, completing input_required
// rounds like CallTool. An unknown resource is a *Error: -32602 from
// modern servers, codeResourceNotFound (-32002) from legacy ones; test
// for both with IsResourceNotFound (errors.As to *Error works as well).
func (c Calls) ReadResource(ctx context.Context, uri string, opts ...RequestOption) (*ReadResourceResult, error) {
	params := struct {
		URI string `json:"uri"`
	}{uri}
	raw, err := c.requestWithInput(ctx, "resources/read", &params, opts)
	var e *Error
	if errors.As(err, &e) && !e.Local() && e.Code == CodeInvalidParams {
		return nil, &readError{e}
	}
	if err != nil {
		return nil, err
	}
	var res ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, malformedResult("resources/read "+uri, err)
	}
	return &res, nil
}

// IsResourceNotFound reports whether err is a server's "resource not
// found": any -32602 answer to ReadResource (the modern spec's code for
// an unknown resource, with or without a uri in its data), or -32002
// (what legacy servers send) from any call.
func IsResourceNotFound(err error) bool {
	var nf *readError
	if errors.As(err, &nf) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && !e.Local() && e.Code == codeResourceNotFound
}

// readError marks the server's -32602 answer to resources/read, which
// IsResourceNotFound reports; it reads exactly as the server's error.
type readError struct{ err *Error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// noValue: args that would marshal to null.
func noValue(args any) bool {
	switch a := args.(type) {
	case nil:
		return true
	case json.RawMessage:
		return len(bytes.TrimSpace(a)) == 0 || bytes.Equal(bytes.TrimSpace(a), []byte("null"))
	}
	v := reflect.ValueOf(args)
	switch v.Kind() {
	case reflect.Map, reflect.Pointer, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// GetPrompt renders the prompt name with args, completing input_required
// rounds like CallTool. Nil args send "arguments": {}, as CallTool does.
func (c Calls) GetPrompt(ctx context.Context, name string, args map[string]string, opts ...RequestOption) (*GetPromptResult, error) {
	if args == nil {
		args = map[string]string{} // "arguments": {}, never absent: TypeScript SDK v1 servers reject a missing member
	}
	params := struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}{name, args}
	raw, err := c.requestWithInput(ctx, "prompts/get", &params, opts)
	if err != nil {
		return nil, err
	}
	var res GetPromptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, malformedResult("prompts/get "+name, err)
	}
	return &res, nil
}

// Complete asks for completions of an argument value of a prompt or
// resource template.
func (c Calls) Complete(ctx context.Context, req CompleteRequest, opts ...RequestOption) (*Completion, error) {
	params := map[string]any{
		"ref":      req.Ref,
		"argument": map[string]string{"name": req.Argument, "value": req.Value},
	}
	if len(req.Context) > 0 {
		params["context"] = map[string]any{"arguments": req.Context}
	}
	raw, err := c.completeRequest(ctx, "completion/complete", params, opts)
	if err != nil {
		return nil, err
	}
	var res struct {
		Completion Completion `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("snodo: completion/complete: malformed result: %w", err)
	}
	return &res.Completion, nil
}

// Ping checks that the server is alive and answering: ping in the legacy
// era; in the modern era, where ping no longer exists, server/discover.
func (c Calls) Ping(ctx context.Context, opts ...RequestOption) error {
	method := "ping"
	if c.requester().Era() == EraModern {
		method = "server/discover"
	}
	_, err := c.completeRequest(ctx, method, nil, opts)
	return err
}

// completeRequest sends a request whose answer must be complete: an
// input_required or unknown resultType is an error.
func (c Calls) completeRequest(ctx context.Context, method string, params any, opts []RequestOption) (json.RawMessage, error) {
	raw, err := c.requester().Request(ctx, method, params, opts...)
	if err != nil {
		if ue := urlElicitationRequired(err); ue != nil {
			return nil, ue
		}
		return nil, err
	}
	rt, err := resultType(method, raw)
	if err != nil {
		return nil, err
	}
	if rt != resultComplete {
		return nil, fmt.Errorf("snodo: %s: the server answered resultType %q, which this method does not allow", method, rt)
	}
	return raw, nil
}

// pages iterates over a paginated list: items under field, following
// nextCursor until the server gives none. A cursor the server already
// gave, or more pages than MaxPages, ends the loop with an error instead
// of going round for ever (memory: one cursor per page, at most MaxPages).
func pages[T any](ctx context.Context, c Calls, method, field string, opts []RequestOption) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		seen := map[string]bool{}
		limit := settingsOf(opts...).MaxPages
		if limit <= 0 {
			limit = defaultMaxPages
		}
		var params any // nil, not a nil map: a request without params has none, not null
		for page := 1; ; page++ {
			if page > limit {
				yield(zero, fmt.Errorf("snodo: %s: more than %d pages, the server keeps giving a nextCursor; stopping (raise the bound with snodo.MaxPages(n) if the list really is that long)", method, limit))
				return
			}
			raw, err := c.completeRequest(ctx, method, params, opts)
			if err != nil {
				yield(zero, err)
				return
			}
			var result map[string]json.RawMessage
			var items []T
			var next string
			err = json.Unmarshal(raw, &result)
			if err == nil && result[field] != nil {
				err = json.Unmarshal(result[field], &items)
			}
			if err == nil && result["nextCursor"] != nil {
				err = json.Unmarshal(result["nextCursor"], &next)
			}
			if err != nil {
				yield(zero, fmt.Errorf("snodo: %s: malformed result: %w", method, err))
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			if seen[next] {
				yield(zero, fmt.Errorf("snodo: %s: the server repeated cursor %q after %d pages; stopping instead of looping", method, next, page))
				return
			}
			seen[next] = true
			params = map[string]any{"cursor": next}
		}
	}
}

// collect gathers an iteration into a slice, stopping at the first error.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
