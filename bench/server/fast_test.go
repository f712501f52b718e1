package server

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestServeFast: the canned answers carry the request's id, follow the
// era of the handshake, and are valid JSON; notifications, responses and
// lines split across reads are handled.
func TestServeFast(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a,b","params":{"name":"echo","arguments":{"method":"x","id":9}},"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{}}}`,
		` { "id" : 5 , "method" : "tools/call" }`,
		`{"jsonrpc":"2.0","id":6,"method":"nope"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := ServeFast(&oneByte{in: []byte(in)}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []struct{ id, has string }{
		{`1`, `"protocolVersion":"2025-11-25"`},
		{`"a,b"`, `{"content":[{"type":"text","text":"hello"}]}`},
		{`4`, `"supportedVersions"`},
		{`5`, `{"resultType":"complete","content":[{"type":"text","text":"hello"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"benchserver","version":"1.0.0"}}}`},
		{`6`, `-32601`},
		{`7`, `{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object"}}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"benchserver","version":"1.0.0"}}}`},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, line := range lines {
		var m struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(line), &m); err != nil || string(m.ID) != want[i].id || !strings.Contains(line, want[i].has) {
			t.Errorf("line %d: %s (want id %s and %s; %v)", i, line, want[i].id, want[i].has, err)
		}
	}
}

// oneByte reads one byte at a time: every line arrives split.
type oneByte struct{ in []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.in) == 0 {
		return 0, io.EOF
	}
	p[0] = o.in[0]
	o.in = o.in[1:]
	return 1, nil
}

// TestServeFastWithoutMeta: configured not to identify itself, the fast
// server puts no _meta in any result, and its modern tools/call answer is
// ServeFast's without it.
func TestServeFastWithoutMeta(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}` + "\n" +
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}` + "\n"
	var out bytes.Buffer
	if err := ServeFastWithoutMeta(&oneByte{in: []byte(in)}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d lines, want 5:\n%s", len(lines), out.String())
	}
	for i, line := range lines {
		if !json.Valid([]byte(line)) || strings.Contains(line, "_meta") {
			t.Errorf("line %d: %s (want valid JSON without _meta)", i, line)
		}
	}
	if want := `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"hello"}]}}`; lines[1] != want {
		t.Errorf("modern tools/call: %s, want %s", lines[1], want)
	}
	if want := `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"hello"}]}}`; lines[4] != want {
		t.Errorf("legacy tools/call: %s, want %s", lines[4], want)
	}
}
