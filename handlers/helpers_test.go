package handlers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// quickEOF makes the test server exit soon after its stdin closes, even
// with server requests of its own still waiting for answers.
const quickEOF = "-eof-grace=200ms"

// start connects to the test server and registers a cleanup that closes
// the connection and checks the server was reaped.
func start(t *testing.T, cfg connection.Config, flags ...string) *connection.Conn {
	t.Helper()
	cfg.Command, cfg.Args = testutil.Server(t, append([]string{quickEOF}, flags...)...)
	c, err := connection.Start(context.Background(), cfg)
	require.NoError(t, err)
	pid := c.ProcessID()
	t.Cleanup(func() {
		c.Close()
		waitDone(t, c)
		testutil.AssertReaped(t, pid, 10*time.Second)
	})
	return c
}

func waitDone(t *testing.T, c *connection.Conn) {
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
func ask(t *testing.T, c *connection.Conn, p map[string]any) []response {
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
func askAsync(t *testing.T, c *connection.Conn, p map[string]any) <-chan []response {
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

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
