package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// backend is a gateway in front of a supervised test server (with args),
// served on no HTTP server: the tests serve it over stdio.
func backend(t *testing.T, args []string, opts ...gateway.Option) (*gateway.Handler, *supervisor.Client) {
	t.Helper()
	path, err := testutil.BuildServer()
	require.NoError(t, err)
	h, err := gateway.New(opts...)
	require.NoError(t, err)
	sc, err := supervisor.Connect(context.Background(), snodo.Command(path, args...), fast,
		supervisor.WithConnectOptions(append(h.ConnectOptions(), snodo.WithTimeout(20*time.Second))...))
	require.NoError(t, err)
	require.NoError(t, h.Attach(sc))
	t.Cleanup(func() {
		_ = h.Close()
		_ = sc.Close()
		<-sc.Done()
	})
	return h, sc
}

// stdioClient connects snodo's client to h over the stdio framing, in
// this process (connection.InMemory runs ServeStdio on pipes).
func stdioClient(t *testing.T, h *gateway.Handler, opts ...snodo.Option) *snodo.Client {
	t.Helper()
	c, err := snodo.ConnectTransport(context.Background(), connection.InMemory(h.ServeStdio), opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		<-c.Done()
	})
	return c
}

// lines is a raw client of ServeStdio: it writes lines and reads them.
type lines struct {
	t    *testing.T
	in   *io.PipeWriter
	out  chan map[string]json.RawMessage
	done chan error
}

func rawStdio(t *testing.T, h *gateway.Handler) *lines {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	l := &lines{t: t, in: inW, out: make(chan map[string]json.RawMessage, 64), done: make(chan error, 1)}
	go func() {
		err := h.ServeStdio(context.Background(), inR, outW)
		_ = outW.Close()
		l.done <- err
	}()
	go func() {
		defer close(l.out)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("not one JSON message a line: %q", sc.Text())
				continue
			}
			l.out <- m
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		require.NoError(t, testutil.Receive(t, l.done, 15*time.Second, "ServeStdio's return at the end of its input"))
		_ = inR.Close()
	})
	return l
}

func (l *lines) send(line string) {
	l.t.Helper()
	_, err := io.WriteString(l.in, line+"\n")
	require.NoError(l.t, err)
}

func (l *lines) next(what string) map[string]json.RawMessage {
	l.t.Helper()
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	select {
	case m, ok := <-l.out:
		require.True(l.t, ok, "the output ended before %s", what)
		return m
	case <-t.C:
		l.t.Fatalf("timed out after 15s waiting for %s", what)
		return nil
	}
}

func (l *lines) initialize() {
	l.t.Helper()
	l.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := l.next("the initialize result")
	require.Contains(l.t, string(m["result"]), `"protocolVersion":"2025-11-25"`, "%v", m)
	l.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// Over stdio every progress update of a call is written before its
// result and none after it, in both eras of the backend: the TypeScript
// SDK fails a call whose progress comes after its result.
func TestStdioProgressBeforeResult(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			h, _ := backend(t, []string{"-era", era})
			l := rawStdio(t, h)
			l.initialize()
			for i := range 3 {
				l.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{"ms":150},"_meta":{"progressToken":"p%d"}}}`, i, i))
				progress := 0
				for {
					m := l.next("the slow call's messages")
					if m["method"] != nil {
						require.JSONEq(t, `"notifications/progress"`, string(m["method"]))
						require.Contains(t, string(m["params"]), fmt.Sprintf(`"progressToken":"p%d"`, i))
						progress++
						continue
					}
					require.JSONEq(t, fmt.Sprint(i), string(m["id"]))
					require.NotNil(t, m["result"], "%v", m)
					break
				}
				assert.Positive(t, progress, "progress before the result")
				// The next message is the ping's answer: no progress after the result.
				l.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
				m := l.next("the ping's answer")
				require.JSONEq(t, `"ping"`, string(m["id"]), "%v", m)
			}
		})
	}
}

// A legacy client over stdio gets what it gets over HTTP: the server's
// logs after logging/setLevel, resource updates after
// resources/subscribe, list changes, and the server's requests answered
// by its own handler; against a modern backend the gateway translates
// each of them.
func TestStdioLegacyClientFidelity(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			h, _ := backend(t, []string{"-era", era})
			notes := make(chan *snodo.Notification, 64)
			var asked atomic.Int32
			c := stdioClient(t, h, snodo.WithEra(snodo.EraLegacy),
				snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{}}),
				snodo.WithServerRequestHandler(func(_ context.Context, req *snodo.ServerRequest) (any, error) {
					if req.Method != "elicitation/create" {
						return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: req.Method}
					}
					return map[string]any{"action": "accept", "content": map[string]any{"name": fmt.Sprint("stdio", asked.Add(1))}}, nil
				}),
				snodo.WithNotificationHandler(func(_ context.Context, n *snodo.Notification) {
					select {
					case notes <- n:
					default:
					}
				}))
			ctx := t.Context()
			await := func(method, what string) *snodo.Notification {
				t.Helper()
				deadline := time.After(10 * time.Second)
				for {
					select {
					case n := <-notes:
						if n.Method == method {
							return n
						}
					case <-deadline:
						t.Fatalf("no %s within 10 s: %s", method, what)
					}
				}
			}

			res, err := c.CallTool(ctx, "ask", map[string]any{"rounds": 2})
			require.NoError(t, err)
			assert.Equal(t, "Hello, stdio2!", res.Text(), "the client's own handler answered each round")

			require.NoError(t, c.SetLoggingLevel(ctx, "info"))
			_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/message", "params": map[string]any{"level": "info", "data": "over stdio"}})
			require.NoError(t, err)
			n := await("notifications/message", "a log after setLevel")
			assert.Contains(t, string(n.Params), "over stdio")

			_, err = c.Request(ctx, "resources/subscribe", map[string]any{"uri": "test://watched"})
			require.NoError(t, err)
			if era == "legacy" {
				_, err = c.Request(ctx, "test/touch", map[string]any{"uri": "test://watched"})
			} else {
				_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]any{"uri": "test://watched"}})
			}
			require.NoError(t, err)
			n = await("notifications/resources/updated", "a resource update after subscribe")
			assert.Contains(t, string(n.Params), "test://watched")

			if era == "legacy" {
				_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
			} else {
				_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
			}
			require.NoError(t, err)
			await("notifications/tools/list_changed", "a list change")
		})
	}
}

// A legacy stdio client's session outlives its backend's restarts: a
// call in flight when the server is killed fails with a clear -32000,
// calls work again within 5 s on the same session, and the client is
// told its lists may have changed.
func TestStdioBackendKilledMidCall(t *testing.T) {
	h, sc := backend(t, []string{"-era", "legacy"})
	notes := make(chan string, 64)
	c := stdioClient(t, h, snodo.WithEra(snodo.EraLegacy), snodo.WithNotificationHandler(func(_ context.Context, n *snodo.Notification) {
		select {
		case notes <- n.Method:
		default:
		}
	}))
	ctx := t.Context()
	pid := sc.Current().ServerPID()
	started := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", map[string]any{"ms": 30000}, snodo.OnProgress(func(snodo.Progress) {
			select {
			case started <- struct{}{}:
			default:
			}
		}))
		errc <- err
	}()
	testutil.Receive(t, started, 15*time.Second, "the slow call's first progress")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	err := testutil.Receive(t, errc, 10*time.Second, "the in-flight call's error")
	var e *snodo.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, snodo.CodeConnectionClosed, e.Code)
	killed := time.Now()
	testutil.Eventually(t, func() bool {
		_, err := c.CallTool(ctx, "echo", map[string]any{"message": "again"})
		return err == nil
	}, 5*time.Second, "calls work again within 5 s")
	t.Logf("calls worked again %v after the kill", time.Since(killed))
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-notes:
			if m == "notifications/tools/list_changed" {
				return
			}
		case <-deadline:
			t.Fatal("no tools/list_changed after the restart")
		}
	}
}

// A request the client cancels is cancelled on the backend and gets no
// answer; the connection goes on.
func TestStdioCancelledRequestGetsNoAnswer(t *testing.T) {
	h, _ := backend(t, []string{"-era", "legacy"})
	l := rawStdio(t, h)
	l.initialize()
	l.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":30000},"_meta":{"progressToken":1}}}`)
	m := l.next("the slow call's first progress")
	require.JSONEq(t, `"notifications/progress"`, string(m["method"]), "%v", m)
	l.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	l.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"after"}}}`)
	for {
		m := l.next("the echo's answer")
		if m["method"] != nil {
			continue // progress written before the cancel took
		}
		require.JSONEq(t, "2", string(m["id"]), "the cancelled call got no answer: %v", m)
		require.Contains(t, string(m["result"]), "after")
		break
	}
}

// What the stdio framing refuses, each with a JSON-RPC error that says
// why: a line that is not JSON, a legacy request before initialize, a
// second initialize, an id already in flight.
func TestStdioRefusals(t *testing.T) {
	h, _ := backend(t, []string{"-era", "legacy"})
	l := rawStdio(t, h)
	l.send(`{not json`)
	m := l.next("the parse error")
	require.Contains(t, string(m["error"]), "-32700")
	l.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	m = l.next("the refusal before initialize")
	require.Contains(t, string(m["error"]), "initialize first")
	l.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	m = l.next("the ping's answer")
	require.JSONEq(t, "{}", string(m["result"]))
	l.initialize()
	l.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m = l.next("the second initialize's refusal")
	require.Contains(t, string(m["error"]), "initialized already")
	l.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{"ms":400}}}`)
	l.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"twice"}}}`)
	m = l.next("the duplicate id's refusal")
	require.Contains(t, string(m["error"]), "in flight")
	m = l.next("the slow call's answer")
	require.NotNil(t, m["result"], "%v", m)
}

// A modern client over stdio: requests with their _meta forwarded as
// they came, input rounds completed by the client, subscriptions/listen
// served with its events.
func TestStdioModernClient(t *testing.T) {
	h, _ := backend(t, []string{"-era", "modern"})
	var asked atomic.Int32
	c := stdioClient(t, h, snodo.WithServerRequestHandler(func(_ context.Context, req *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": fmt.Sprint("modern", asked.Add(1))}}, nil
	}))
	require.Equal(t, snodo.EraModern, c.Era())
	ctx := t.Context()
	res, err := c.CallTool(ctx, "ask", map[string]any{"rounds": 2})
	require.NoError(t, err)
	assert.Equal(t, "Hello, modern2!", res.Text())
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	ev := testutil.Receive(t, sub.Events(), 10*time.Second, "the list change on the subscription")
	assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	assert.True(t, strings.HasPrefix(c.ServerInfo().Name, "snodo-testserver"))
}
