package snodo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// In the modern era Notify refuses params that are not an object as
// Request does: a local -32602 and nothing sent. The legacy era sends
// them (JSON-RPC allows arrays).
func TestNotifyNonObjectParams(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		modern := c.Era() == EraModern
		for _, p := range []string{`[1,2]`, `42`, `"text"`} {
			err := c.Notify(t.Context(), "notifications/x", json.RawMessage(p))
			_, reqErr := c.Request(t.Context(), "test/echo", json.RawMessage(p))
			if !modern {
				require.NoError(t, err)
				continue
			}
			var e, re *Error
			require.ErrorAs(t, err, &e, p)
			require.ErrorAs(t, reqErr, &re, p)
			require.Equal(t, CodeInvalidParams, e.Code)
			require.True(t, e.Local(), "a local error dressed as the server's: %v", err)
			require.ErrorIs(t, err, ErrInvalidParams)
			require.Contains(t, err.Error(), "nothing was sent")
			require.Equal(t, re.Code, e.Code, "the same check as Request")
		}
		require.NoError(t, c.Notify(t.Context(), "notifications/x", map[string]int{"last": 1}))
		want := 1
		if !modern {
			want = 4
		}
		raw, err := c.Request(t.Context(), "test/waitNotification", map[string]any{"method": "notifications/x", "count": want})
		require.NoError(t, err)
		var got struct {
			Messages []struct {
				Params json.RawMessage `json:"params"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(raw, &got))
		require.Len(t, got.Messages, want)
		require.JSONEq(t, `{"last":1}`, string(got.Messages[want-1].Params))
	})
}
