package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snodo/snodo"
)

// info prints the era, protocol version, server info and capabilities.
func (s *session) info(c *snodo.Client) error {
	v := infoDoc{
		Era:             string(c.Era()),
		ProtocolVersion: c.ProtocolVersion(),
		ServerInfo:      c.ServerInfo(),
		Capabilities:    c.Capabilities(),
		Instructions:    c.Instructions(),
		Sandbox:         describeSandbox(s.sandbox),
	}
	if s.cfg.json {
		return printJSON(s.io.out, v)
	}
	printInfo(s.io.out, v, "")
	return nil
}

// caller is what the commands call: a local connection or a remote
// named server.
type caller interface {
	Request(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error)
	ListTools(ctx context.Context, opts ...snodo.RequestOption) ([]snodo.Tool, error)
	CallTool(ctx context.Context, name string, args any, opts ...snodo.RequestOption) (*snodo.CallToolResult, error)
}

// stream is an open subscription, local or remote.
type stream interface {
	Events() <-chan snodo.Event
	Err() error
	Close() error
	Acknowledged() snodo.Filter
}

// tools prints the tools as a table, or their full definitions with --json.
func (s *session) tools(ctx context.Context, c caller) error {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	if s.cfg.json {
		if tools == nil {
			tools = []snodo.Tool{} // [], not null: a script iterates over it
		}
		return printJSON(s.io.out, map[string]any{"tools": tools})
	}
	w := 0
	if s.io.outTTY {
		w = width(s.io.outFd)
	}
	printTools(s.io.out, tools, "", w)
	return nil
}

// call calls a tool, showing its progress, and prints its result. A result
// with isError set is a failure (exit status 1).
func (s *session) call(ctx context.Context, c caller) error {
	var args json.RawMessage
	if len(s.cfg.args) == 2 {
		args = json.RawMessage(s.cfg.args[1])
	}
	bar := s.progress()
	res, err := c.CallTool(ctx, s.cfg.args[0], args, bar.options()...)
	bar.finish()
	if err != nil {
		return err
	}
	if s.cfg.json {
		if err := printJSON(s.io.out, res); err != nil {
			return err
		}
	} else if !res.IsError {
		printResult(s.io.out, res, "")
	}
	if res.IsError {
		return &toolError{text: oneLine(resultText(res))}
	}
	return nil
}

// request sends any request and prints its raw result.
func (s *session) request(ctx context.Context, c caller) error {
	var params any
	if len(s.cfg.args) == 2 {
		params = json.RawMessage(s.cfg.args[1])
	}
	bar := s.progress()
	raw, err := c.Request(ctx, s.cfg.args[0], params, bar.options()...)
	bar.finish()
	if err != nil {
		return err
	}
	return printRaw(s.io.out, raw, !s.cfg.json)
}

// listen prints the events of one subscription until --count events
// arrived, --for elapsed, Ctrl-C, or the server ended it. Stopping it with
// Ctrl-C is a success.
func (s *session) listen(ctx context.Context, open func(context.Context, snodo.Filter) (stream, error)) error {
	f := snodo.Filter{
		ToolsListChanged:      s.cfg.tools,
		PromptsListChanged:    s.cfg.prompts,
		ResourcesListChanged:  s.cfg.resources,
		ResourceSubscriptions: s.cfg.resourceURIs,
	}
	if f.ResourceSubscriptions == nil && !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged {
		f.ToolsListChanged, f.PromptsListChanged, f.ResourcesListChanged = true, true, true
	}
	sub, err := open(ctx, f)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer sub.Close()
	if ack := sub.Acknowledged(); !ack.ToolsListChanged && !ack.PromptsListChanged && !ack.ResourcesListChanged && len(ack.ResourceSubscriptions) == 0 {
		// Types it left out are never delivered: there is nothing to wait for.
		return fmt.Errorf("the server acknowledged none of the notifications asked for (%s), so no event can arrive; ask for what it offers ('snodo info' lists its capabilities)", describeFilter(f))
	}
	if !s.cfg.json {
		fmt.Fprintf(s.io.err, "snodo: listening for %s (Ctrl-C to stop)\n", describeFilter(sub.Acknowledged()))
	}
	var deadline <-chan time.Time
	if s.cfg.forDur > 0 {
		deadline = time.After(s.cfg.forDur)
	}
	for n := 0; s.cfg.count == 0 || n < s.cfg.count; n++ {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				return sub.Err()
			}
			if err := printEvent(s.io.out, ev, s.cfg.json); err != nil {
				return err
			}
		case <-deadline:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}
