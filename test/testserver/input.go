package testserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The unlisted "input" tool asks the client for input, rounds times:
// input_required results with one input request (modern), or real
// requests to the client (legacy). The request is method (default
// roots/list) with params. Its text is the root URIs of the last answer,
// one a line, for roots/list, and the raw answer otherwise.
func (s *server) inputTool(req *request, p *callParams) (any, *rpcError) {
	rounds := askRounds(p.Arguments)
	var args struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(p.Arguments, &args)
	if args.Method == "" {
		args.Method = "roots/list"
	}
	text := func(answer json.RawMessage) string {
		if args.Method == "roots/list" {
			return rootURIs(answer)
		}
		return string(answer)
	}
	if !req.modern {
		var last string
		for range rounds {
			var params any
			if len(args.Params) > 0 {
				params = args.Params
			}
			line := s.call(req, args.Method, params, 30*time.Second)
			if line == nil {
				if req.ctx.Err() != nil {
					return noAnswer, nil
				}
				return textResult(args.Method+" timed out", true), nil
			}
			var resp struct {
				Result json.RawMessage `json:"result"`
				Error  *rpcError       `json:"error"`
			}
			_ = json.Unmarshal(line, &resp)
			if resp.Error != nil {
				return textResult(args.Method+" failed: "+resp.Error.Message, true), nil
			}
			last = text(resp.Result)
		}
		return textResult(last, false), nil
	}
	round := 0
	if p.RequestState != nil {
		n, err := strconv.Atoi(*p.RequestState)
		if err != nil {
			return nil, errInvalidParams("invalid requestState")
		}
		round = n
	}
	if answer, ok := p.InputResponses["input"]; ok && round >= rounds {
		return textResult(text(answer), false), nil
	}
	in := obj{"method": args.Method}
	if len(args.Params) > 0 {
		in["params"] = args.Params
	}
	return obj{
		"resultType":    "input_required",
		"inputRequests": obj{"input": in},
		"requestState":  strconv.Itoa(round + 1),
	}, nil
}

func rootURIs(result json.RawMessage) string {
	var r struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	_ = json.Unmarshal(result, &r)
	uris := make([]string, len(r.Roots))
	for i, root := range r.Roots {
		uris[i] = root.URI
	}
	return strings.Join(uris, "\n")
}
