package handlers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// quickEOF makes the test server exit soon after its stdin closes, even
// with server requests of its own still waiting for answers.
const quickEOF = "-eof-grace=200ms"

// start starts the test server (exiting soon after EOF) with flags on a
// connection configured by cfg, closed (and its server checked reaped)
// when the test ends.
func start(t *testing.T, cfg engine.Config, flags ...string) *engine.Conn {
	t.Helper()
	c, _ := testutil.StartLent(t, func(command string, args []string, lend *connseam.Lent) (*engine.Conn, error) {
		cfg.Command, cfg.Args, cfg.Lend = command, args, lend
		return engine.Start(context.Background(), cfg)
	}, append([]string{quickEOF}, flags...)...)
	return c
}

func waitDone(t *testing.T, c *engine.Conn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("connection not done within 20 s")
	}
}

// response is one answer the client sent, as the test server reports it.
type response struct {
	ID        json.RawMessage `json:"id"`
	Result    json.RawMessage `json:"result"`
	Error     *jsonrpc.Error  `json:"error"`
	Cancelled bool            `json:"cancelled"` // the server cancelled it
	Late      json.RawMessage `json:"late"`      // answer after the cancel
}

// ask makes the test server send server requests (test/serverRequest
// with params p) and returns the client's answers.
func ask(t *testing.T, c *engine.Conn, p map[string]any) []response {
	t.Helper()
	res, err := c.Request(context.Background(), "test/serverRequest", p, nil)
	require.NoError(t, err)
	return parseResponses(t, res)
}

func parseResponses(t *testing.T, res json.RawMessage) []response {
	t.Helper()
	var out struct{ Responses []*response }
	require.NoError(t, json.Unmarshal(res, &out), string(res))
	rs := make([]response, len(out.Responses))
	for i, r := range out.Responses {
		if r != nil {
			rs[i] = *r
		}
	}
	return rs
}

// askAsync is ask on another goroutine; the channel gets the answers.
func askAsync(t *testing.T, c *engine.Conn, p map[string]any) <-chan []response {
	t.Helper()
	ch := make(chan []response, 1)
	go func() {
		res, err := c.Request(context.Background(), "test/serverRequest", p, nil)
		if err != nil {
			ch <- nil
			return
		}
		ch <- parseResponses(t, res)
	}()
	return ch
}

func codeOf(r response) int {
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}
