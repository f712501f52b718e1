package testutil

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// PostMCP posts one JSON-RPC message to a Streamable HTTP endpoint as an
// MCP client would (Content-Type, Accept of both forms), with headers
// added (Mcp-Session-Id, say). The response's body is closed when the
// test ends.
func PostMCP(t testing.TB, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("a POST to %s: %v", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a POST to %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Messages reads every JSON-RPC message of a response: its one JSON
// body, or each SSE event's data up to the response that ends the
// stream.
func Messages(t testing.TB, resp *http.Response) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading an answer: %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("an answer that is no JSON object: %v: %s", err, b)
		}
		return append(out, m)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("an SSE event that is no JSON object: %v: %s", err, data)
			}
			out = append(out, m)
			if m["method"] == nil {
				break // the response ends the stream
			}
		}
	}
	return out
}

// InitializeLegacy opens a legacy (2025-11-25) session at a Streamable
// HTTP endpoint, initialize then notifications/initialized, and returns
// its id.
func InitializeLegacy(t testing.TB, url string) string {
	t.Helper()
	resp := PostMCP(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: HTTP %s", resp.Status)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	msgs := Messages(t, resp)
	if res := string(msgs[0]["result"]); !strings.Contains(res, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: not the 2025-11-25 era: %s", res)
	}
	resp = PostMCP(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": id})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %s, not 202", resp.Status)
	}
	return id
}

// SessionPID asks the test server behind legacy session sid for its
// process id (test/pid): the pid, the HTTP status, and the JSON-RPC
// error when the call failed (then the pid is 0).
func SessionPID(t testing.TB, url, sid string) (pid, status int, rpcErr string) {
	t.Helper()
	resp := PostMCP(t, url, `{"jsonrpc":"2.0","id":9,"method":"test/pid"}`, map[string]string{"Mcp-Session-Id": sid})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, resp.StatusCode, ""
	}
	msgs := Messages(t, resp)
	last := msgs[len(msgs)-1]
	if last["error"] != nil {
		return 0, http.StatusOK, string(last["error"])
	}
	var r struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(last["result"], &r); err != nil {
		t.Fatalf("test/pid: %v: %s", err, last["result"])
	}
	return r.PID, http.StatusOK, ""
}
