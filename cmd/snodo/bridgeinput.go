package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/remote"
)

// Input a served server needs during a call (sampling, elicitation,
// roots): a modern client completes input_required rounds itself; for a
// legacy client the bridge completes them, asking it each input request
// as a request of its era.
// modernRequest tells a request of a modern client (its _meta names its
// protocol version): it completes input_required rounds itself.
func modernRequest(params []byte) bool {
	meta, _ := jsonrpc.Member(params, "_meta")
	if len(meta) == 0 {
		return false
	}
	v, _ := jsonrpc.Member(meta, metaProtocolVersion)
	return len(v) > 0
}

// inputRequired tells an input_required result (a modern server's), which
// a legacy client cannot read.
func inputRequired(res []byte) bool {
	rt, _ := jsonrpc.Member(res, "resultType")
	return string(rt) == `"input_required"`
}

// completeInput completes the input_required rounds of a call for the
// legacy client, which knows none: snodo's typed call runs the rounds
// (each input request goes to the client as a request of its era, by
// serverRequest), starting from the result already in hand, and the
// final round's raw result is the answer.
func (b *bridge) completeInput(ctx context.Context, method string, params, first []byte, opts []snodo.RequestOption) (json.RawMessage, error) {
	r := &rounds{c: b.c, first: first}
	typed := snodo.Calls(calls.New[snodo.RequestOption, snodo.Era](r, calls.Calls[snodo.RequestOption, snodo.Era](b.c.Calls).Input()))
	var err error
	switch method {
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			_, err = typed.CallTool(ctx, p.Name, p.Arguments, opts...)
		}
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			_, err = typed.ReadResource(ctx, p.URI, opts...)
		}
	case "prompts/get":
		var p struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			_, err = typed.GetPrompt(ctx, p.Name, p.Arguments, opts...)
		}
	default:
		return nil, &snodo.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("snodo bridge: the served server asked for input (input_required) in answer to %s, which the bridge cannot complete for a legacy client", method)}
	}
	if err != nil {
		return nil, err
	}
	return r.last, nil
}

// rounds is the Requester of one call's input rounds: its first request
// is answered with the result already in hand (it was sent), the others
// go to the served name; the last raw result is kept.
type rounds struct {
	c     *remote.Client
	first json.RawMessage
	last  json.RawMessage
}

func (r *rounds) Request(ctx context.Context, method string, params any, opts ...snodo.RequestOption) (json.RawMessage, error) {
	if r.first != nil {
		r.last, r.first = r.first, nil
		return r.last, nil
	}
	raw, err := r.c.Request(ctx, method, params, opts...)
	r.last = raw
	return raw, err
}
func (r *rounds) Era() snodo.Era { return r.c.Era() }

// serverRequest sends a request of the served server's (an input
// request: sampling, elicitation, roots) to the client under a fresh id
// and returns its answer, bounded by ctx.
func (b *bridge) serverRequest(ctx context.Context, req *snodo.ServerRequest) (any, error) {
	if caps := b.caps.Load(); caps != nil && !declares(caps, req.Method) {
		// The client said it cannot answer it: it is not sent.
		return nil, &snodo.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("snodo bridge: the client did not declare the capability %s needs, so it was not asked", req.Method)}
	}
	n := b.nextID.Add(1)
	id := "snodo-bridge-" + strconv.FormatInt(n, 10)
	ch := make(chan jsonrpc.Envelope, 1)
	b.mu.Lock()
	if len(b.asked) >= bridgeMaxInFlight {
		b.mu.Unlock()
		return nil, fmt.Errorf("snodo bridge: %d requests wait for the client's answer already (its bound)", bridgeMaxInFlight)
	}
	b.asked[n] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.asked, n)
		b.mu.Unlock()
	}()
	params := req.Params
	if len(params) == 0 {
		params = nil
	}
	buf := append([]byte(`{"jsonrpc":"2.0","id":`), jsonrpc.AppendString(nil, id)...)
	buf = append(buf, `,"method":`...)
	buf = jsonrpc.AppendString(buf, req.Method)
	if params != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	buf = append(buf, "}\n"...)
	if !b.write(buf) {
		return nil, errors.New("snodo bridge: the client's stdout is closed")
	}
	select {
	case env := <-ch:
		if env.Error != nil {
			var e snodo.Error
			if err := json.Unmarshal(env.Error, &e); err != nil {
				return nil, fmt.Errorf("snodo bridge: the client answered %s with a malformed error: %w", req.Method, err)
			}
			return nil, &e
		}
		return json.RawMessage(slices.Clone(env.Result)), nil
	case <-ctx.Done():
		cancelled, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the served server no longer waits"})
		b.write(jsonrpc.AppendNotification(nil, "notifications/cancelled", cancelled))
		return nil, ctx.Err()
	}
}

// declares tells whether a client with caps answers method.
func declares(caps *snodo.ClientCapabilities, method string) bool {
	switch method {
	case "sampling/createMessage":
		return caps.Sampling != nil
	case "elicitation/create":
		return caps.Elicitation != nil
	case "roots/list":
		return caps.Roots != nil
	}
	return true // one snodo does not know: the client says
}

// answered routes the client's answer to a request of the bridge's.
func (b *bridge) answered(env jsonrpc.Envelope) {
	var id string
	if json.Unmarshal(env.ID, &id) != nil {
		return
	}
	var n int64
	if _, err := fmt.Sscanf(id, "snodo-bridge-%d", &n); err != nil {
		return
	}
	b.mu.Lock()
	ch := b.asked[n]
	b.mu.Unlock()
	if ch == nil {
		b.log.Debug("snodo bridge: an answer to no request of the bridge's", "id", id)
		return
	}
	env.Result, env.Error = slices.Clone(env.Result), slices.Clone(env.Error)
	select {
	case ch <- env:
	default: // a second answer: the first wins
	}
}
