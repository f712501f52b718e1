package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/test/testutil"
)

// A legacy client's progress comes on its call's own stream, under its
// own token, every update before the result.
func TestLegacyProgressBeforeResult(t *testing.T) {
	s := serve(t, []string{"-era", "legacy"})
	sid := testutil.InitializeLegacy(t, s.url)
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":7,"method":"test/progress","params":{"count":5,"intervalMs":5,"_meta":{"progressToken":"tok-1"}}}`,
		map[string]string{"Mcp-Session-Id": sid})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	msgs := testutil.Messages(t, resp)
	require.Len(t, msgs, 6, "5 progress notifications, then the result")
	for i, m := range msgs[:5] {
		require.Equal(t, `"notifications/progress"`, string(m["method"]), "message %d", i)
		require.Contains(t, string(m["params"]), `"progressToken":"tok-1"`)
	}
	require.Equal(t, `7`, string(msgs[5]["id"]))
	require.JSONEq(t, `{"done":5}`, string(msgs[5]["result"]))
}

// Errors go back as the server sent them: code, message and data.
func TestErrorsAsTheyCame(t *testing.T) {
	s := serve(t, []string{"-era", "legacy"})
	sid := testutil.InitializeLegacy(t, s.url)
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":"x","method":"test/error","params":{"code":4242,"message":"nope","data":{"why":1}}}`,
		map[string]string{"Mcp-Session-Id": sid})
	msgs := testutil.Messages(t, resp)
	require.JSONEq(t, `{"code":4242,"message":"nope","data":{"why":1}}`, string(msgs[0]["error"]))
	require.Equal(t, `"x"`, string(msgs[0]["id"]))
}

// snodo's own client, in each era, through the gateway: typed calls,
// list paging (through the cache), and the server's requests answered by
// the client's own handler — a legacy elicitation/create relayed on the
// call's stream, a modern input_required result passed through.
func TestClientsOfBothEras(t *testing.T) {
	for _, era := range []snodo.Era{snodo.EraLegacy, snodo.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			s := serve(t, []string{"-era", string(era)})
			var asked atomic.Int32
			handler := func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
				asked.Add(1)
				return handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "yes"}}, nil
			}
			ctx := context.Background()
			c, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(era), snodo.WithServerRequestHandler(handler),
				snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}}))
			require.NoError(t, err)
			defer c.Close()
			require.Equal(t, era, c.Era())

			tools, err := c.ListTools(ctx)
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(tools), 5, "every page, followed through the cache")
			res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hi"})
			require.NoError(t, err)
			require.Contains(t, compact(mustJSON(t, res)), "hi")

			res, err = c.CallTool(ctx, "ask", map[string]any{"rounds": 1})
			require.NoError(t, err)
			require.False(t, res.IsError, compact(mustJSON(t, res)))
			require.EqualValues(t, 1, asked.Load(), "the client's own handler answered the server")
		})
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// HTTP discipline: a foreign Origin is refused (403), a body over the
// limit is refused (413), malformed JSON is answered -32700, an unknown
// session 404.
func TestHTTPDiscipline(t *testing.T) {
	s := serve(t, []string{"-era", "legacy"}, gateway.WithMaxBodyBytes(1024))
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, map[string]string{"Origin": "http://evil.example"})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp = testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"x","params":{"pad":"`+strings.Repeat("a", 2000)+`"}}`, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	resp = testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":1,`, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, string(testutil.Messages(t, resp)[0]["error"]), `-32700`)

	resp = testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Session-Id": "nope"})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{}`))
	req.Host = "rebound.example:80"
	r2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r2.Body.Close()
	require.Equal(t, http.StatusForbidden, r2.StatusCode, "a non-loopback Host on a loopback listener")
}

// A legacy session lives as long as its server: after the server is
// killed and restarted, the session answers 404, and a new initialize
// works at once on the restarted server.
func TestSessionEndsWithItsServer(t *testing.T) {
	s := serve(t, []string{"-era", "legacy"})
	sid := testutil.InitializeLegacy(t, s.url)
	cur := s.sc.Current()
	require.NotNil(t, cur)
	pid := cur.ServerPID()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	testutil.AssertReaped(t, pid, 10*time.Second)
	testutil.Eventually(t, func() bool { return s.sc.Restarts() > 0 && s.sc.Current() != nil }, 10*time.Second, "the server restarted")
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	sid2 := testutil.InitializeLegacy(t, s.url)
	require.NotEqual(t, sid, sid2)
	resp = testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"back"}}}`, map[string]string{"Mcp-Session-Id": sid2})
	require.Contains(t, string(testutil.Messages(t, resp)[0]["result"]), "back")
}

// Sessions are bounded: past WithMaxSessions an initialize gets 503.
func TestSessionsBounded(t *testing.T) {
	s := serve(t, []string{"-era", "legacy"}, gateway.WithMaxSessions(2))
	testutil.InitializeLegacy(t, s.url)
	testutil.InitializeLegacy(t, s.url)
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
}

// A modern request whose headers do not match its body is refused with
// -32020 and 400; one without the required _meta with -32602 and 400.
func TestModernHeaderChecks(t *testing.T) {
	s := serve(t, []string{"-era", "modern"})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	hdr := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"}
	resp := testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},`+meta+`}}`, hdr)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, string(testutil.Messages(t, resp)[0]["error"]), `-32020`)

	resp = testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, string(testutil.Messages(t, resp)[0]["error"]), `-32602`)

	hdr["Mcp-Name"] = "echo"
	resp = testutil.PostMCP(t, s.url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},`+meta+`}}`, hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(testutil.Messages(t, resp)[0]["result"]), `"x"`)
}

// A legacy client of a modern-only server: the gateway translates. The
// server's input_required rounds reach the client as legacy
// elicitation/create requests on the call's stream, its answers go back
// as inputResponses, and the client sees only the final result;
// logging/setLevel is kept by the session and sent as each request's
// logLevel.
func TestLegacyClientOfModernServer(t *testing.T) {
	s := serve(t, []string{"-era", "modern"})
	var asked atomic.Int32
	ctx := context.Background()
	c, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(snodo.EraLegacy),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}}),
		snodo.WithServerRequestHandler(func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
			asked.Add(1)
			return handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "legacy"}}, nil
		}))
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, snodo.EraLegacy, c.Era())
	res, err := c.CallTool(ctx, "ask", map[string]any{"rounds": 2})
	require.NoError(t, err)
	require.False(t, res.IsError, compact(mustJSON(t, res)))
	require.EqualValues(t, 2, asked.Load(), "each round's input request went to the client")
	require.NoError(t, c.SetLoggingLevel(ctx, "debug"))
	raw, err := s.sc.Request(ctx, "test/requests", map[string]any{"method": "tools/call"})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"inputResponses"`, "the answers went back to the server")
	_, err = c.CallTool(ctx, "echo", map[string]any{"message": "x"})
	require.NoError(t, err)
	raw, err = s.sc.Request(ctx, "test/requests", map[string]any{"method": "tools/call"})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"io.modelcontextprotocol/logLevel":"debug"`, "the session's level rides in _meta")
}
