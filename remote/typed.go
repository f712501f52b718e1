package remote

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo"
)

// ListTools returns every tool the server offers, following nextCursor.
func (c *Client) ListTools(ctx context.Context, opts ...snodo.RequestOption) ([]snodo.Tool, error) {
	var out []snodo.Tool
	var params any
	for range 1000 {
		raw, err := c.Request(ctx, "tools/list", params, opts...)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []snodo.Tool `json:"tools"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("remote: tools/list: malformed result: %w", err)
		}
		out = append(out, page.Tools...)
		if page.NextCursor == "" {
			return out, nil
		}
		params = map[string]string{"cursor": page.NextCursor}
	}
	return nil, fmt.Errorf("remote: tools/list: more than 1000 pages")
}

// CallTool calls the tool name with args, completing input_required
// rounds with the WithServerRequestHandler handler; each round may go to
// a different host.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...snodo.RequestOption) (*snodo.CallToolResult, error) {
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	for round := 0; ; round++ {
		raw, err := c.Request(ctx, "tools/call", params, opts...)
		if err != nil {
			return nil, err
		}
		var ir struct {
			ResultType    string `json:"resultType"`
			InputRequests map[string]struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"inputRequests"`
			RequestState json.RawMessage `json:"requestState"`
		}
		if err := json.Unmarshal(raw, &ir); err != nil {
			return nil, fmt.Errorf("remote: tools/call %s: malformed result: %w", name, err)
		}
		if ir.ResultType != "input_required" {
			var res snodo.CallToolResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return nil, fmt.Errorf("remote: tools/call %s: malformed result: %w", name, err)
			}
			return &res, nil
		}
		if round >= c.cfg.maxRounds {
			return nil, fmt.Errorf("%w: tools/call %s", snodo.ErrTooManyInputRounds, name)
		}
		responses := map[string]any{}
		for key, in := range ir.InputRequests {
			if c.cfg.handler == nil {
				return nil, fmt.Errorf("%w: %s asked for %s and the client has no handler", snodo.ErrInputRequest, name, in.Method)
			}
			id, _ := json.Marshal(key)
			res, err := c.cfg.handler(ctx, &snodo.ServerRequest{ID: id, Method: in.Method, Params: in.Params})
			if err != nil {
				return nil, fmt.Errorf("%w: %w", snodo.ErrInputRequest, err)
			}
			responses[key] = res
		}
		params["inputResponses"] = responses
		params["requestState"] = ir.RequestState
	}
}
