package testserver_test

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSubscriptions(t *testing.T) {
	p := start(t, "-era", "modern")
	p.request(10, "subscriptions/listen", modern(map[string]any{"notifications": map[string]any{
		"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": []string{"test://a"},
	}}))
	ack := p.next()
	if ack.Method != "notifications/subscriptions/acknowledged" ||
		string(ack.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":10},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://a"]}}` {
		t.Fatalf("ack: %s %s", ack.Method, ack.Params)
	}
	p.request(1, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": 2})
	var sent struct{ Sent int }
	p.result(1, &sent)
	if sent.Sent != 2 || len(p.notes) != 2 || !strings.Contains(string(p.notes[0].Params), `"io.modelcontextprotocol/subscriptionId":10`) {
		t.Fatalf("emit: sent %d, notes %+v", sent.Sent, p.notes)
	}
	p.request(2, "test/emit", map[string]any{"method": "notifications/prompts/list_changed"})
	p.result(2, &sent)
	if sent.Sent != 0 {
		t.Errorf("prompts emitted %d", sent.Sent)
	}
	p.request(3, "test/emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]any{"uri": "test://a"}})
	p.result(3, &sent)
	if sent.Sent != 1 {
		t.Errorf("resources/updated emitted %d", sent.Sent)
	}
	p.request(4, "test/endSubscription", map[string]any{"subscription": 10, "mode": "graceful"})
	if end := p.next(); string(end.ID) != "10" ||
		string(end.Result) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":10},"resultType":"complete"}` {
		t.Fatalf("graceful end: %+v", end)
	}
	var empty map[string]any
	p.result(4, &empty)

	// Cancellation by the client drops the subscription silently.
	p.request(11, "subscriptions/listen", modern(map[string]any{"notifications": map[string]any{"toolsListChanged": true}}))
	p.next()
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}`)
	p.request(5, "test/subscriptions", nil)
	var open struct{ Open []json.RawMessage }
	p.result(5, &open)
	if len(open.Open) != 0 {
		t.Errorf("open after cancel: %s", open.Open)
	}
}

func TestToolsListPaging(t *testing.T) {
	p := start(t)
	var names []string
	var cursor any
	for id := 1; id < 10; id++ {
		params := modern(nil)
		if cursor != nil {
			params["cursor"] = cursor
		}
		p.request(id, "tools/list", params)
		var page struct {
			Tools      []struct{ Name string }
			NextCursor string
			ResultType string
		}
		p.result(id, &page)
		if page.ResultType != "complete" || len(page.Tools) > 2 {
			t.Fatalf("page %+v", page)
		}
		for _, tool := range page.Tools {
			names = append(names, tool.Name)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if got := strings.Join(names, ","); got != "echo,add,fail,slow,ask" {
		t.Errorf("tools: %s", got)
	}
}

type askResult struct {
	ResultType    string
	InputRequests map[string]struct {
		Method string
	}
	RequestState string
	Content      []struct{ Text string }
	IsError      bool
}

func TestMRTRAsk(t *testing.T) {
	p := start(t)
	call := func(id int, extra map[string]any) askResult {
		params := modern(map[string]any{"name": "ask", "arguments": map[string]any{"rounds": 2}})
		for k, v := range extra {
			params[k] = v
		}
		p.request(id, "tools/call", params)
		var r askResult
		p.result(id, &r)
		return r
	}
	r := call(1, nil)
	if r.ResultType != "input_required" || r.InputRequests["name"].Method != "elicitation/create" || r.RequestState == "" {
		t.Fatalf("round 1: %+v", r)
	}
	answer := func(name string) map[string]any {
		return map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": name}}}
	}
	r = call(2, map[string]any{"inputResponses": answer("first"), "requestState": r.RequestState})
	if r.ResultType != "input_required" || r.RequestState == "" {
		t.Fatalf("round 2: %+v", r)
	}
	r = call(3, map[string]any{"inputResponses": answer("Ada"), "requestState": r.RequestState})
	if r.ResultType != "complete" || len(r.Content) != 1 || r.Content[0].Text != "Hello, Ada!" {
		t.Fatalf("final: %+v", r)
	}
	p.request(4, "tools/call", modern(map[string]any{"name": "ask", "inputResponses": answer("x"), "requestState": "forged"}))
	if c := p.errorCode(4); c != -32602 {
		t.Errorf("forged state: code %d", c)
	}
}

func TestLegacyAskElicits(t *testing.T) {
	p := start(t, "-era", "legacy")
	p.request(1, "tools/call", map[string]any{"name": "ask"})
	req := p.next()
	if req.Method != "elicitation/create" || string(req.ID) != `"s1"` {
		t.Fatalf("want elicitation request, got %+v", req)
	}
	p.send(`{"jsonrpc":"2.0","id":"s1","result":{"action":"accept","content":{"name":"Bob"}}}`)
	var r askResult
	p.result(1, &r)
	if len(r.Content) != 1 || r.Content[0].Text != "Hello, Bob!" {
		t.Fatalf("legacy ask: %+v", r)
	}
	p.request(2, "test/requests", map[string]any{"method": "tools/call"})
	var reqs struct {
		Requests []struct {
			Method string
			Params json.RawMessage
		}
	}
	p.result(2, &reqs)
	if len(reqs.Requests) != 1 || string(reqs.Requests[0].Params) != `{"name":"ask"}` {
		t.Errorf("recorded requests: %+v", reqs)
	}
}
