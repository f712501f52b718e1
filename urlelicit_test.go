package snodo

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/handlers"
)

// urlUser accepts every URL elicitation and records the URLs.
type urlUser struct {
	mu   sync.Mutex
	urls []string
	deny bool
}

func (u *urlUser) handler(_ context.Context, req *ServerRequest) (any, error) {
	p, err := req.Elicitation()
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.urls = append(u.urls, p.URL)
	if u.deny {
		return &handlers.ElicitResult{Action: "decline"}, nil
	}
	return &handlers.ElicitResult{Action: "accept"}, nil
}

func TestURLElicitationRequiredIsTyped(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		_, err := c.CallTool(t.Context(), "url", map[string]string{"id": "a"})
		var ue *URLElicitationRequiredError
		require.ErrorAs(t, err, &ue)
		require.Len(t, ue.Elicitations, 1)
		assert.Equal(t, "https://example.com/auth/a", ue.Elicitations[0].URL)
		assert.Equal(t, "Sign in to Example.", ue.Elicitations[0].Message)
		assert.Equal(t, "el-a", ue.Elicitations[0].ElicitationID)
		assert.Contains(t, err.Error(), "open https://example.com/auth/a")
		var e *Error
		require.ErrorAs(t, err, &e, "the server's *Error is still there")
		assert.Equal(t, codeURLElicitationRequired, e.Code)

		res, err := c.CallTool(t.Context(), "url", map[string]string{"id": "a"})
		require.NoError(t, err, "once through, the call is served")
		assert.Equal(t, "through a", res.Text())
	})
}

func TestRetryURLElicitation(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			u := &urlUser{}
			c := dialTest(t, []string{"-era", era}, WithServerRequestHandler(u.handler))
			res, err := c.CallTool(t.Context(), "url", map[string]string{"id": "b"}, RetryURLElicitation())
			require.NoError(t, err)
			assert.Equal(t, "through b", res.Text())
			assert.Equal(t, []string{"https://example.com/auth/b"}, u.urls)

			u.deny = true
			_, err = c.CallTool(t.Context(), "url", map[string]string{"id": "c"}, RetryURLElicitation())
			var ue *URLElicitationRequiredError
			require.ErrorAs(t, err, &ue, "declined: the error stands")
			assert.Len(t, seen(t, c, "tools/call"), 3, "declined: no retry")
		})
	}
}

// The reference server's trigger-url-elicitation with errorPath answers
// -32042: the typed error, and with RetryURLElicitation the call goes
// through after the user opened the page.
func TestEverythingServerURLElicitation(t *testing.T) {
	a := &answers{}
	caps := allCaps
	caps.Elicitation = &ElicitationCapability{Form: true, URL: true}
	c := dialPeer(t, tsEverything(t), a, WithClientCapabilities(caps))
	waitForTool(t, c, "trigger-url-elicitation")
	args := map[string]any{"url": "https://example.com/start", "errorPath": true}
	_, err := c.CallTool(t.Context(), "trigger-url-elicitation", args)
	var ue *URLElicitationRequiredError
	require.ErrorAs(t, err, &ue)
	require.NotEmpty(t, ue.Elicitations)
	assert.NotEmpty(t, ue.Elicitations[0].URL)
	assert.NotEmpty(t, ue.Elicitations[0].ElicitationID)

	args["elicitationId"] = "retry-1" // a fresh prerequisite, handled this time
	res, err := c.CallTool(t.Context(), "trigger-url-elicitation", args, RetryURLElicitation())
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "User completed the URL elicitation flow")
}

// waitForTool waits until the server lists name (capability-gated tools
// arrive after initialized).
func waitForTool(t *testing.T, c *Client, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		tools, err := c.ListTools(t.Context())
		return err == nil && slices.ContainsFunc(tools, func(tool Tool) bool { return tool.Name == name })
	}, 10*time.Second, 50*time.Millisecond, "tool %s offered", name)
}
