package snodo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/dispatch"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
)

// Multi round-trip requests (modern era): a server that needs input
// (sampling, elicitation, roots) answers tools/call, resources/read or
// prompts/get with resultType "input_required". The client fulfils each
// inputRequests entry with the server-request handler and sends the same
// request again, under a new ID, with inputResponses and the exact
// requestState, until the result is complete.

// Result types.
const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"
	resultTask          = "task" // the tasks extension's CreateTaskResult (tools/call only)
)

// Errors of the multi-round-trip flow, for errors.Is.
var (
	// ErrTooManyInputRounds: the server still asked for input after the
	// bound set by WithMaxInputRounds.
	ErrTooManyInputRounds = errors.New("snodo: too many input_required rounds")
	// ErrUnknownResultType: the server answered a resultType snodo does
	// not know; the spec makes such a result invalid.
	ErrUnknownResultType = errors.New("snodo: unknown resultType")
	// ErrInputRequest: the server-request handler could not fulfil one of
	// the server's input requests.
	ErrInputRequest = errors.New("snodo: input request failed")
)

// inputRequired is the part of an input_required result the client uses.
type inputRequired struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]inputRequest `json:"inputRequests"`
	RequestState  json.RawMessage         `json:"requestState"`
}

type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// resultType reads a result's resultType: absent means complete; an
// unknown value is an error.
func resultType(method string, raw json.RawMessage) (string, error) {
	member, err := jsonrpc.Member(raw, "resultType") // no decoding of the (maybe large) rest
	if err != nil {
		return "", fmt.Errorf("snodo: %s: malformed result: %w", method, err)
	}
	switch string(member) {
	case "":
		return resultComplete, nil
	case `"` + resultComplete + `"`:
		return resultComplete, nil
	case `"` + resultInputRequired + `"`:
		return resultInputRequired, nil
	case `"` + resultTask + `"`:
		if method == "tools/call" {
			return resultTask, nil
		}
	}
	var rt string
	if err := json.Unmarshal(member, &rt); err != nil {
		return "", fmt.Errorf("snodo: %s: malformed resultType %s", method, member)
	}
	return "", fmt.Errorf("%w %q in the result of %s", ErrUnknownResultType, rt, method)
}

// requestWithInput sends method with params (anything that marshals to a
// JSON object) and completes input_required rounds, returning the final
// result. The first round sends params as they are; only a retry decodes
// them into members to add inputResponses and requestState.
func (c Calls) requestWithInput(ctx context.Context, method string, params any, opts []RequestOption) (json.RawMessage, error) {
	raw, _, err := c.requestWithInputType(ctx, method, params, opts)
	return raw, err
}

// requestWithInputType is requestWithInput that also returns the final
// result's resultType (resultComplete, or resultTask for tools/call), so
// that its caller need not read it again.
func (c Calls) requestWithInputType(ctx context.Context, method string, params any, opts []RequestOption) (json.RawMessage, string, error) {
	var in calls.InputHandling // asked for at the first input_required: most calls never need it
	var retry map[string]any
	retriedURL := false
	for round := 0; ; round++ {
		raw, err := c.requester().Request(ctx, method, params, opts...)
		if err != nil {
			ue := urlElicitationRequired(err)
			if ue == nil {
				return nil, "", err
			}
			if retriedURL || !settingsOf(opts...).RetryURLElicitation {
				return nil, "", ue
			}
			if err := c.elicitURLs(ctx, method, ue, opts); err != nil {
				return nil, "", err
			}
			retriedURL, round = true, round-1 // once, and no input round
			continue
		}
		rt, err := resultType(method, raw)
		if err != nil || rt == resultComplete || rt == resultTask {
			return raw, rt, err // a task (tools/call) is CallTool's to run
		}
		if round == 0 {
			in = c.inputHandling()
		}
		if round >= cmp.Or(in.MaxRounds, limits.MaxInputRounds) {
			return nil, "", fmt.Errorf("%w: %s still needed input after %d rounds (raise the bound with WithMaxInputRounds)",
				ErrTooManyInputRounds, method, round)
		}
		var ir inputRequired
		if err := json.Unmarshal(raw, &ir); err != nil {
			return nil, "", fmt.Errorf("snodo: %s: malformed input_required result: %w", method, err)
		}
		if len(ir.InputRequests) == 0 && len(ir.RequestState) == 0 {
			return nil, "", fmt.Errorf("snodo: %s: input_required result with neither inputRequests nor requestState", method)
		}
		if retry == nil {
			if retry, err = members(params); err != nil {
				return nil, "", fmt.Errorf("snodo: %s: %w", method, err)
			}
		}
		delete(retry, "inputResponses")
		delete(retry, "requestState")
		if len(ir.InputRequests) > 0 {
			responses, err := fulfil(ctx, in, method, ir.InputRequests, opts)
			if err != nil {
				return nil, "", err
			}
			retry["inputResponses"] = responses
		}
		if len(ir.RequestState) > 0 && string(ir.RequestState) != "null" {
			retry["requestState"] = ir.RequestState // echoed byte for byte
		}
		params = retry
	}
}

// members turns params into its JSON object's members, each kept as raw
// JSON so that nothing (large numbers, say) changes on the way back out.
func members(params any) (map[string]any, error) {
	raw, err := jsonrpc.Marshal(params)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("params must be a JSON object: %w", err)
		}
	}
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// fulfil answers every input request of one round with in.Serve (for a
// Client, the connection's one handler path: child actors under the
// WithMaxServerRequests bound, in arrival order beyond it) and collects
// the results by key. The call's ctx and its timeout bound the wait; the
// first failure fails the call.
func fulfil(ctx context.Context, in calls.InputHandling, method string, reqs map[string]inputRequest, opts []RequestOption) (map[string]json.RawMessage, error) {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	batch := make([]*ServerRequest, len(keys))
	for i, key := range keys {
		id, _ := json.Marshal(key) // the ID of an input request is its key, as a JSON string
		batch[i] = &ServerRequest{ID: id, Method: reqs[key].Method, Params: reqs[key].Params}
	}
	serve := in.Serve
	if serve == nil {
		serve = func(ctx context.Context, reqs []*ServerRequest, timeout time.Duration) ([]json.RawMessage, error) {
			return dispatch.Serve(ctx, nil, nil, reqs, timeout)
		}
	}
	results, err := serve(ctx, batch, settingsOf(opts...).Timeout)
	if err != nil {
		var ie *dispatch.InputError
		if !errors.As(err, &ie) {
			return nil, fmt.Errorf("snodo: %s: %w", method, err)
		}
		key := keys[ie.Index]
		cause := ie.Err
		var e *Error
		if errors.As(cause, &e) && !e.Local() {
			cause = &handlerError{e} // the handler's own error, not the server's
		}
		if e != nil && e.Code == CodeMethodNotFound {
			cause = fmt.Errorf("%w; answer it in WithServerRequestHandler and declare it in WithClientCapabilities", cause)
		}
		return nil, fmt.Errorf("%w: %s asked for %s (key %q): %w", ErrInputRequest, method, reqs[key].Method, key, cause)
	}
	out := make(map[string]json.RawMessage, len(keys))
	for i, key := range keys {
		out[key] = results[i]
	}
	return out, nil
}

// handlerError is a *Error the server-request handler returned for an
// input request: it reads as the handler's, never as the server's.
type handlerError struct{ err *Error }

func (e *handlerError) Error() string {
	return fmt.Sprintf("the handler answered error %d: %s", e.err.Code, e.err.Message)
}

func (e *handlerError) Unwrap() error { return e.err }
