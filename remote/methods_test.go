package remote

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// TestHostRefusesLifecycleMethods: a remote caller's initialize and
// notifications/… never reach the server, in either era; the caller gets
// a -32600 that says why. server/discover goes through.
func TestHostRefusesLifecycleMethods(t *testing.T) {
	for _, tc := range []struct {
		era   string
		opts  []snodo.Option
		flags []string
	}{
		{"legacy", []snodo.Option{snodo.WithEra(snodo.EraLegacy)}, []string{"-era", "legacy"}},
		{"modern", nil, nil},
	} {
		t.Run(tc.era, func(t *testing.T) {
			e := natsServer(t)
			hostWith(t, e, "life", 1, tc.opts, tc.flags...)
			c := client(t, e, "life")
			ctx := ctxFor(t, 20*time.Second)

			// A long call of another caller, whose id on the host's
			// connection a hostile caller might guess.
			other := make(chan error, 1)
			go func() {
				_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 1500, "honorCancel": true})
				other <- err
			}()
			refused := []struct {
				method string
				params any
				why    string
			}{
				{"initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
					"clientInfo": map[string]any{"name": "x", "version": "1"}}, "initialized already"},
				{"notifications/initialized", nil, "notifications are the host's"},
				{"notifications/cancelled", map[string]any{"requestId": 1}, "notifications are the host's"},
				{"notifications/cancelled", map[string]any{"requestId": 2}, "notifications are the host's"},
				{"notifications/roots/list_changed", nil, "notifications are the host's"},
				{"subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, "use remote.Client.Listen"},
				{"resources/subscribe", map[string]any{"uri": "test://a"}, "resource subscriptions"},
				{"resources/unsubscribe", map[string]any{"uri": "test://a"}, "resource subscriptions"},
				{"logging/setLevel", map[string]any{"level": "debug"}, "log level"},
			}
			for _, r := range refused {
				_, err := c.Request(ctx, r.method, r.params)
				var re *snodo.Error
				require.ErrorAs(t, err, &re, r.method)
				assert.Equal(t, jsonrpc.CodeInvalidRequest, re.Code, r.method)
				assert.Contains(t, re.Message, r.why, r.method)
				assert.Contains(t, re.Message, "refuses "+r.method, r.method)
			}
			require.NoError(t, <-other, "another caller's call must not be cancelled")

			// server/discover is stateless: forwarded.
			_, err := c.Request(ctx, "server/discover", nil)
			if tc.era == "legacy" {
				var re *snodo.Error
				require.ErrorAs(t, err, &re)
				assert.Equal(t, jsonrpc.CodeMethodNotFound, re.Code, "the legacy server's own answer")
			} else {
				require.NoError(t, err)
			}

			// The server saw only the host's own handshake.
			raw, err := c.Request(ctx, "test/requests", nil)
			require.NoError(t, err)
			var reqs struct{ Requests []struct{ Method string } }
			require.NoError(t, json.Unmarshal(raw, &reqs))
			inits, discovers := 0, 0
			for _, r := range reqs.Requests {
				assert.NotContains(t, r.Method, "notifications/", "a notification sent as a request reached the server")
				if r.Method != "initialize" { // the host's own: counted below
					assert.Empty(t, refusedMethod(r.Method), "a refused method reached the server")
				}
				switch r.Method {
				case "initialize":
					inits++
				case "server/discover":
					discovers++
				}
			}
			if tc.era == "legacy" {
				assert.Equal(t, 1, inits, "only the host's handshake")
			} else {
				assert.Zero(t, inits)
			}
			assert.GreaterOrEqual(t, discovers, 1)
			raw, err = c.Request(ctx, "test/received", map[string]any{"method": "notifications/initialized"})
			require.NoError(t, err)
			var got struct{ Messages []json.RawMessage }
			require.NoError(t, json.Unmarshal(raw, &got))
			if tc.era == "legacy" {
				assert.Len(t, got.Messages, 1, "only the host's notifications/initialized")
			} else {
				assert.Empty(t, got.Messages)
			}
		})
	}
}

func TestRefusedMethod(t *testing.T) {
	for _, m := range []string{"initialize", "notifications/initialized", "notifications/cancelled", "notifications/progress", "subscriptions/listen", "resources/subscribe", "resources/unsubscribe", "logging/setLevel"} {
		assert.NotEmpty(t, refusedMethod(m), m)
	}
	for _, m := range []string{"server/discover", "tools/call", "ping", "initialized", "test/echo"} {
		assert.Empty(t, refusedMethod(m), m)
	}
}

func TestWithoutProgressToken(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:                                     `{"a":1}`,
		`[1,{"_meta":{"progressToken":1}}]`:           `[1,{"_meta":{"progressToken":1}}]`,
		`{"_meta":"progressToken"}`:                   `{"_meta":"progressToken"}`,
		`{"progressToken":1}`:                         `{"progressToken":1}`,
		`{"_meta":{"progressToken":7,"k":"v"},"a":1}`: `{"_meta":{"k":"v"},"a":1}`,
		`{"_meta":{"progressToken":null}}`:            `{"_meta":{}}`,
		`{"_meta":{"progress\u0054oken":7}}`:          `{"_meta":{}}`,
	} {
		assert.JSONEq(t, want, string(withoutProgressToken([]byte(in))), in)
	}
}

// TestInvalidUTF8PayloadNeverReachesTheServer: JSON text is UTF-8; a
// strict server's reader would fail on such a line, and with it the
// connection every other caller of the host shares.
func TestInvalidUTF8PayloadNeverReachesTheServer(t *testing.T) {
	e := natsServer(t)
	host(t, e, "utf", 1)
	c := client(t, e, "utf")
	ctx := ctxFor(t, 20*time.Second)
	_, err := c.Request(ctx, "test/echo", json.RawMessage("{\"a\":\"\xff\xfe\"}"))
	var re *snodo.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, jsonrpc.CodeInvalidRequest, re.Code)
	assert.Contains(t, re.Message, "not valid UTF-8")
	raw, err := c.Request(ctx, "test/requests", map[string]any{"method": "test/echo"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"requests":[]}`, string(raw))
}
