package testserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The MCP surface: tools, resources, prompts and completion.

// toolsPageSize is the tools/list page size, small so listing pages.
const toolsPageSize = 2

func stringSchema(props ...string) obj {
	p := obj{}
	for _, name := range props {
		p[name] = obj{"type": "string"}
	}
	return obj{"type": "object", "properties": p, "required": props}
}

var tools = []obj{
	{"name": "echo", "description": "Echoes message.", "inputSchema": stringSchema("message")},
	{"name": "add", "description": "Adds a and b.", "inputSchema": obj{
		"type":       "object",
		"properties": obj{"a": obj{"type": "number"}, "b": obj{"type": "number"}},
		"required":   []string{"a", "b"},
	}, "outputSchema": obj{
		"type":       "object",
		"properties": obj{"sum": obj{"type": "number"}},
		"required":   []string{"sum"},
	}},
	{"name": "fail", "description": "Always fails.", "inputSchema": obj{"type": "object"}},
	{"name": "slow", "description": "Sleeps ms milliseconds.", "inputSchema": obj{
		"type": "object", "properties": obj{"ms": obj{"type": "number"}},
	}},
	{"name": "ask", "description": "Asks the user for a name.", "inputSchema": obj{
		"type": "object", "properties": obj{"rounds": obj{"type": "number"}},
	}},
}

// cacheable adds the CacheableResult fields to modern results.
func cacheable(req *request, res obj) obj {
	if req.modern {
		res["ttlMs"] = 0
		res["cacheScope"] = "public"
	}
	return res
}

type cursorParams struct {
	Cursor *string `json:"cursor"`
}

func (s *server) toolsList(req *request) (any, *rpcError) {
	var p cursorParams
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	start := 0
	if p.Cursor != nil {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 {
			return nil, errInvalidParams("invalid cursor")
		}
		start = n
	}
	list := tools
	if s.cfg.tasks {
		list = append(list[:len(list):len(list)], researchTool)
	}
	if start >= len(list) {
		return nil, errInvalidParams("invalid cursor")
	}
	end := min(start+toolsPageSize, len(list))
	res := obj{"tools": list[start:end]}
	if end < len(list) {
		res["nextCursor"] = strconv.Itoa(end)
	}
	return cacheable(req, res), nil
}

// callParams are the params of tools/call.
type callParams struct {
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
	Task           *struct {
		TTL *int64 `json:"ttl"`
	} `json:"task"`
}

func textResult(text string, isError bool) obj {
	res := obj{"content": []obj{{"type": "text", "text": text}}}
	if isError {
		res["isError"] = true
	}
	return res
}

func (s *server) toolsCall(req *request) (any, *rpcError) {
	var p callParams
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	var args struct {
		Message string  `json:"message"`
		A       float64 `json:"a"`
		B       float64 `json:"b"`
		Ms      int     `json:"ms"`
	}
	if len(p.Arguments) > 0 && json.Unmarshal(p.Arguments, &args) != nil {
		return nil, errInvalidParams("arguments must be an object")
	}
	switch p.Name {
	case "echo":
		return textResult(args.Message, false), nil
	case "add":
		sum := args.A + args.B
		res := textResult(strconv.FormatFloat(sum, 'f', -1, 64), false)
		res["structuredContent"] = obj{"sum": sum}
		return res, nil
	case "fail":
		return textResult("tool failed", true), nil
	case "slow":
		return s.slowTool(req, args.Ms)
	case "ask":
		return s.ask(req, &p)
	case "input":
		return s.inputTool(req, &p)
	case "url":
		return s.urlTool(&p)
	case "research":
		if s.cfg.tasks {
			return s.research(req, &p)
		}
	}
	if res, ok := s.sandboxTool(req, &p); ok {
		return res, nil
	}
	return nil, errInvalidParams("unknown tool " + p.Name)
}

// slowTool sleeps ms, reporting progress every 10 ms when asked; it stops
// without answering when cancelled.
func (s *server) slowTool(req *request, ms int) (any, *rpcError) {
	deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	done := time.NewTimer(time.Until(deadline))
	defer done.Stop()
	for elapsed := 10; ; elapsed += 10 {
		select {
		case <-req.ctx.Done():
			return noAnswer, nil
		case <-done.C:
			return textResult("slept "+strconv.Itoa(ms)+" ms", false), nil
		case <-tick.C:
			if req.meta.progressToken != nil {
				s.notify("notifications/progress", obj{
					"progressToken": req.meta.progressToken,
					"progress":      min(elapsed, ms),
					"total":         ms,
				})
			}
		}
	}
}

var resources = []obj{
	{"uri": "test://a", "name": "a", "mimeType": "text/plain"},
	{"uri": "test://b", "name": "b", "mimeType": "text/plain"},
}

func (s *server) resourcesList(req *request) (any, *rpcError) {
	return cacheable(req, obj{"resources": resources}), nil
}

func (s *server) templatesList(req *request) (any, *rpcError) {
	return cacheable(req, obj{"resourceTemplates": []obj{
		{"uriTemplate": "test://items/{id}", "name": "item", "mimeType": "text/plain"},
	}}), nil
}

func (s *server) resourcesRead(req *request) (any, *rpcError) {
	var p struct {
		URI string `json:"uri"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	var text string
	switch {
	case p.URI == "test://a" || p.URI == "test://b":
		text = "content of " + strings.TrimPrefix(p.URI, "test://")
	case strings.HasPrefix(p.URI, "test://items/") && len(p.URI) > len("test://items/"):
		text = "item " + strings.TrimPrefix(p.URI, "test://items/")
	default:
		code := -32002
		if req.modern {
			code = -32602
		}
		e := errorf(code, "resource not found")
		if !strings.HasPrefix(p.URI, "test://bare/") { // bare: the error has no data, as many servers send it
			e.Data = encode(obj{"uri": p.URI})
		}
		return nil, e
	}
	return cacheable(req, obj{"contents": []obj{{"uri": p.URI, "mimeType": "text/plain", "text": text}}}), nil
}

func (s *server) promptsList(req *request) (any, *rpcError) {
	return cacheable(req, obj{"prompts": []obj{{
		"name":        "greet",
		"description": "Greets someone.",
		"arguments":   []obj{{"name": "name", "description": "Who to greet.", "required": true}},
	}}}), nil
}

func (s *server) promptsGet(req *request) (any, *rpcError) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if p.Name != "greet" {
		return nil, errInvalidParams("unknown prompt " + p.Name)
	}
	return obj{"messages": []obj{{
		"role":    "user",
		"content": obj{"type": "text", "text": "Hello, " + p.Arguments["name"] + "!"},
	}}}, nil
}

func (s *server) complete(req *request) (any, *rpcError) {
	var p struct {
		Argument struct {
			Value string `json:"value"`
		} `json:"argument"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	values := []string{}
	for _, v := range []string{"alpha", "beta"} {
		if strings.HasPrefix(v, p.Argument.Value) {
			values = append(values, v)
		}
	}
	return obj{"completion": obj{"values": values, "total": len(values), "hasMore": false}}, nil
}
