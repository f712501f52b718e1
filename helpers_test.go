package snodo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

// The root package's tests are in package snodo, so that a test may look
// at an unexported name; the runnable examples (example_*_test.go,
// connect_async_test.go) are in package snodo_test, so that they read as
// a user's code. Every test connects through dialTest (the scriptable
// test server) or dialPeer (a real reference server, peers_test.go).

// dialTest starts the test server with flags (see test/testserver) and
// closes the client, waiting for the server to exit and checking it was
// reaped, when the test ends.
func dialTest(t *testing.T, flags []string, opts ...Option) *Client {
	t.Helper()
	return testutil.Start(t, func(command string, args []string) (*Client, error) {
		return Connect(t.Context(), command, args, opts...)
	}, flags...)
}

// forEachEra runs fn against the test server speaking each era.
func forEachEra(t *testing.T, fn func(t *testing.T, c *Client)) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) { fn(t, dialTest(t, []string{"-era", era})) })
	}
}

type seenRequest struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
}

// seen asks the test server which requests of method it received.
func seen(t *testing.T, c *Client, method string) []seenRequest {
	t.Helper()
	raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": method})
	require.NoError(t, err)
	var res struct {
		Requests []seenRequest `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	return res.Requests
}

// metaOf returns the _meta members of params.
func metaOf(t *testing.T, params json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(params, &p))
	return p.Meta
}

// requestMeta is the _meta every request carries in the negotiated era, as
// members (nil in the legacy era).
func (c *Client) requestMeta() map[string]json.RawMessage {
	encoded := c.encodedMeta()
	if encoded == nil {
		return nil
	}
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(encoded, &meta) // encoded by setMeta: cannot fail
	return meta
}
