package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestServeSpecShaped: every modern result of the realistic server carries
// resultType and the server's identity in _meta, as spec-following modern
// servers' do; legacy results carry neither.
func TestServeSpecShaped(t *testing.T) {
	const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modern + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modern + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",` + modern + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask",` + modern + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","inputResponses":{"confirm":{}},"requestState":"st1",` + modern + `}}`,
		`{"jsonrpc":"2.0","id":6,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modern + `}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"emit","arguments":{"count":1},` + modern + `}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"big",` + modern + `}}`,
		`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"big"}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := Serve(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	results := 0
	for line := range strings.SplitSeq(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var m struct {
			ID     int
			Method string
			Result *struct {
				ResultType string `json:"resultType"`
				Meta       struct {
					ServerInfo *struct{ Name string } `json:"io.modelcontextprotocol/serverInfo"`
				} `json:"_meta"`
			}
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%.200s: %v", line, err)
		}
		if m.Method != "" {
			continue // the listen stream's notifications
		}
		if m.Result == nil {
			t.Fatalf("%.200s: no result", line)
		}
		results++
		if m.ID <= 8 && (m.Result.ResultType == "" || m.Result.Meta.ServerInfo == nil || m.Result.Meta.ServerInfo.Name != "benchserver") {
			t.Errorf("modern result %d is not spec-shaped: %.200s", m.ID, line)
		}
		if m.ID > 8 && (m.Result.ResultType != "" || strings.Contains(line, "_meta")) {
			t.Errorf("legacy result %d carries modern members: %.200s", m.ID, line)
		}
		if (m.ID == 8 || m.ID == 12) && len(line)+1 != BigLineBytes {
			t.Errorf("big result %d is %d bytes with its newline, want %d", m.ID, len(line)+1, BigLineBytes)
		}
	}
	if results != 11 {
		t.Errorf("got %d results, want 11 (every request but listen)", results)
	}
}
