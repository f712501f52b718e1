package demoserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// tools are the tools offered from the start; timeTool joins them when the
// plugin has loaded (listen.go).
var tools = []obj{
	{
		"name":        "countdown",
		"title":       "Countdown",
		"description": "Counts down from a number (default 5), reporting progress at each step.",
		"inputSchema": obj{"type": "object", "properties": obj{
			"from": obj{"type": "integer", "minimum": 1, "maximum": 20},
		}},
	},
	{
		"name":        "greet",
		"title":       "Greet",
		"description": "Greets you by name; asks the client for your name first.",
		"inputSchema": obj{"type": "object"},
	},
}

var timeTool = obj{
	"name":        "time",
	"title":       "Time",
	"description": "Tells the server's time (added by a plugin after start-up).",
	"inputSchema": obj{"type": "object"},
}

func (s *server) listTools(context.Context, *message, *requestMeta) (any, *rpcError) {
	list := append([]obj(nil), tools...)
	if s.subs.pluginLoaded() {
		list = append(list, timeTool)
	}
	return obj{"resultType": "complete", "tools": list, "ttlMs": 0, "cacheScope": "public"}, nil
}

// callParams are the params of tools/call. InputResponses comes back on
// the retry of a call that answered input_required.
type callParams struct {
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

func (s *server) callTool(ctx context.Context, m *message, meta *requestMeta) (any, *rpcError) {
	var p callParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "invalid tools/call params: " + err.Error()}
	}
	switch {
	case p.Name == "countdown":
		return s.countdown(ctx, p.Arguments, meta.ProgressToken)
	case p.Name == "greet":
		return greet(p.InputResponses, meta.ClientCapabilities), nil
	case p.Name == "time" && s.subs.pluginLoaded():
		return textResult("The server's time is "+time.Now().Format(time.TimeOnly)+".", false), nil
	}
	return nil, &rpcError{Code: codeInvalidParams, Message: "unknown tool " + p.Name + " (tools/list names the tools)"}
}

// textResult is a tool result with one text block.
func textResult(text string, isError bool) obj {
	res := obj{"resultType": "complete", "content": []obj{{"type": "text", "text": text}}}
	if isError {
		res["isError"] = true
	}
	return res
}

// countdown sleeps one tick per step. When the client sent a progressToken
// it reports each step; when the client cancels, it stops and the request
// is never answered.
func (s *server) countdown(ctx context.Context, args json.RawMessage, token json.RawMessage) (any, *rpcError) {
	a := struct {
		From int `json:"from"`
	}{From: 5}
	if len(args) > 0 && json.Unmarshal(args, &a) != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: `countdown takes {"from": N}`}
	}
	if a.From < 1 || a.From > 20 {
		return nil, &rpcError{Code: codeInvalidParams, Message: "countdown: from must be between 1 and 20"}
	}
	for step := 1; step <= a.From; step++ {
		select {
		case <-ctx.Done():
			return nil, noAnswer
		case <-time.After(s.opts.Tick):
		}
		if len(token) > 0 {
			s.notify(ctx, "notifications/progress", obj{
				"progressToken": token,
				"progress":      step,
				"total":         a.From,
				"message":       fmt.Sprintf("T-minus %d", a.From-step),
			})
		}
	}
	return textResult(fmt.Sprintf("Liftoff! (counted down from %d)", a.From), false), nil
}

// nameKey is greet's key in inputRequests and inputResponses.
const nameKey = "name"

// greet needs the user's name, which only the client can get. Rather than
// sending a request of its own (the legacy way), the server answers
// "input_required" with the request it would like fulfilled; the client
// asks the user and calls greet again with the answer in inputResponses.
//
// greet keeps no state between the two calls, so it sends no requestState:
// everything it needs is in the retry.
func greet(responses map[string]json.RawMessage, clientCaps json.RawMessage) obj {
	var caps struct {
		Elicitation json.RawMessage `json:"elicitation"`
	}
	_ = json.Unmarshal(clientCaps, &caps)
	if len(caps.Elicitation) == 0 {
		// Servers must not ask for what the client did not declare.
		return textResult("greet needs a client that declares the elicitation capability", true)
	}
	raw, ok := responses[nameKey]
	if !ok {
		return obj{
			"resultType": "input_required",
			"inputRequests": obj{nameKey: obj{
				"method": "elicitation/create",
				"params": obj{
					"mode":    "form",
					"message": "What should I call you?",
					"requestedSchema": obj{
						"type":       "object",
						"properties": obj{"name": obj{"type": "string", "title": "Your name"}},
						"required":   []string{"name"},
					},
				},
			}},
		}
	}
	var answer struct {
		Action  string `json:"action"`
		Content struct {
			Name string `json:"name"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &answer) != nil {
		return textResult("greet: the answer to "+nameKey+" is not an elicitation result", true)
	}
	if answer.Action != "accept" || answer.Content.Name == "" {
		return textResult("No name, no greeting (the request for a name was "+answer.Action+"d).", true)
	}
	return textResult("Hello, "+answer.Content.Name+"!", false)
}
