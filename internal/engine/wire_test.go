package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// sentLines records every line written to the server (Config.Trace).
type sentLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *sentLines) trace(dir connection.Direction, line []byte) {
	if dir != connection.Sent {
		return
	}
	s.mu.Lock()
	s.lines = append(s.lines, string(line))
	s.mu.Unlock()
}

// requireOneValuePerLine checks every line written so far is one valid
// JSON value with no line break inside.
func (s *sentLines) requireOneValuePerLine(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.lines)
	for _, l := range s.lines {
		require.True(t, json.Valid([]byte(l)), "not valid JSON on the wire: %q", l)
		require.NotContains(t, l, "\n")
		require.NotContains(t, l, "\r")
	}
}

// requireInvalidParams checks err is the local -32602 saying nothing was sent.
func requireInvalidParams(t *testing.T, err error) {
	t.Helper()
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, jsonrpc.CodeInvalidParams, e.Code, err.Error())
	require.True(t, e.Local(), "a local error dressed as the server's: %v", err)
	require.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
	require.Contains(t, err.Error(), "nothing was sent")
	require.NotContains(t, err.Error(), "server error")
}

// Raw JSON from callers cannot break framing: multi-line values are
// compacted, invalid ones and injection attempts fail at once, locally,
// and the server sees only what was meant.
func TestCallerRawJSONNeverBreaksFraming(t *testing.T) {
	var sent sentLines
	c := start(t, Config{Trace: sent.trace, Timeout: 30 * time.Second})
	ctx := context.Background()

	indented := json.RawMessage("{\n \"a\": 1,\r\n \"b\": [1,\n2]\n}")
	res, err := c.Request(ctx, "test/echo", indented, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1,"b":[1,2]}`, string(res))
	res, err = c.Request(ctx, "test/echo", []byte("[\n1\n]"), nil)
	require.NoError(t, err)
	require.JSONEq(t, `[1]`, string(res))

	for _, bad := range []string{
		"{}}\n{\"jsonrpc\":\"2.0\",\"id\":424242,\"method\":\"test/exit\"}",
		`{"a":`, `{} {}`, `not json`, `{"a":1,}`, `"\x"`, `01`,
	} {
		began := time.Now()
		_, err := c.Request(ctx, "test/echo", json.RawMessage(bad), nil)
		requireInvalidParams(t, err)
		require.Less(t, time.Since(began), time.Second, "%q must fail at once, not time out", bad)
		requireInvalidParams(t, c.Notify(ctx, "notifications/x", []byte(bad)))
	}
	_, err = c.Request(ctx, "test/echo", make(chan int), nil) // json.Marshal refuses it
	requireInvalidParams(t, err)

	require.NoError(t, c.Notify(ctx, "notifications/indented", json.RawMessage("{\n\"k\":\n\"v\"\n}")))
	got := mustCall(t, c, "test/waitNotification", map[string]any{"method": "notifications/indented"})
	require.Contains(t, string(got), `"params":{"k":"v"}`)
	reqs := mustCall(t, c, "test/requests", map[string]any{"method": "test/exit"})
	require.JSONEq(t, `{"requests":[]}`, string(reqs), "the injected request reached the server")
	sent.requireOneValuePerLine(t)
}

// Raw params sent again are checked once (a copy kept), yet the caller's
// bytes are what counts: the same slice changed between calls goes out
// as changed, and changed into invalid JSON or a second message it is
// refused like any other.
func TestReusedRawParamsAreCheckedAsTheyAre(t *testing.T) {
	var sent sentLines
	c := start(t, Config{Trace: sent.trace, Timeout: 30 * time.Second})
	ctx := context.Background()
	buf := []byte(`{"n":1}                                                                             `)
	params := json.RawMessage(buf[:7])
	for range 3 { // twice to be kept, then from the kept copy
		require.JSONEq(t, `{"n":1}`, string(mustCall(t, c, "test/echo", params)))
	}
	copy(buf, `{"n":2}`)
	require.JSONEq(t, `{"n":2}`, string(mustCall(t, c, "test/echo", params)))
	injected := "{}}\n{\"jsonrpc\":\"2.0\",\"id\":424242,\"method\":\"test/exit\"}"
	for range 3 {
		require.JSONEq(t, `{"n":2}`, string(mustCall(t, c, "test/echo", params)))
	}
	params = json.RawMessage(buf[:copy(buf, injected)])
	_, err := c.Request(ctx, "test/echo", params, nil)
	requireInvalidParams(t, err)
	copy(buf, `{"n":3}`)
	params = params[:7]
	require.JSONEq(t, `{"n":3}`, string(mustCall(t, c, "test/echo", params)))
	reqs := mustCall(t, c, "test/requests", map[string]any{"method": "test/exit"})
	require.JSONEq(t, `{"requests":[]}`, string(reqs), "the injected request reached the server")
	sent.requireOneValuePerLine(t)
}

// A handler's *Error.Data and result are checked like params: multi-line
// data is compacted, invalid data becomes a -32603 answer.
func TestHandlerErrorDataNeverBreaksFraming(t *testing.T) {
	var sent sentLines
	data := map[string]json.RawMessage{"multi": json.RawMessage("{\n\"why\": \"x\"\n}"), "bad": json.RawMessage(`{"why":`)}
	h := handlers.Func(func(_ context.Context, r *handlers.Request) (any, error) {
		var p struct{ Which string }
		_ = json.Unmarshal(r.Params, &p)
		return nil, &jsonrpc.Error{Code: 4242, Message: "no", Data: data[p.Which]}
	})
	c := start(t, Config{Handler: h, Trace: sent.trace}, "-era", "legacy")
	res := mustCall(t, c, "test/serverRequest", map[string]any{"method": "x/y", "params": map[string]any{"which": "multi"}})
	require.Contains(t, string(res), `"error":{"code":4242,"message":"no","data":{"why":"x"}}`)
	res = mustCall(t, c, "test/serverRequest", map[string]any{"method": "x/y", "params": map[string]any{"which": "bad"}})
	require.Contains(t, string(res), `"code":-32603`)
	require.Contains(t, string(res), "not valid JSON")
	sent.requireOneValuePerLine(t)
}

// Member names written with escapes are their decoded names: an answer
// spelled {"\u0069d":N,"r\u0065sult":…} answers request N.
func TestEscapedMemberNamesAnswerTheRequest(t *testing.T) {
	c := start(t, Config{Timeout: 10 * time.Second})
	res, err := c.Request(context.Background(), "test/rawAnswer",
		map[string]string{"line": `{"jsonrpc":"2.0","\u0069d":$ID,"r\u0065sult":{"escaped":true}}`}, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"escaped":true}`, string(res))
	_, err = c.Request(context.Background(), "test/rawAnswer",
		map[string]string{"line": `{"jsonrpc":"2.0","\u0069d":$ID,"\u0065rror":{"code":7,"message":"escaped"}}`}, nil)
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 7, e.Code)
	require.False(t, e.Local())
}

// Params that are not an object cannot carry _meta: a local -32602
// before anything is sent, never dressed as the server's.
func TestNonObjectParamsWithMetaFailLocally(t *testing.T) {
	var sent sentLines
	c := start(t, Config{Trace: sent.trace})
	for _, p := range []string{`[1,2]`, `42`, `"text"`, `{"_meta":5}`} {
		_, err := c.Request(context.Background(), "test/echo", json.RawMessage(p), &CallOptions{Meta: []byte(`{"k":1}`)})
		requireInvalidParams(t, err)
	}
	sent.mu.Lock()
	require.Empty(t, sent.lines, "nothing may be sent")
	sent.mu.Unlock()
}

// A nil ctx is refused before anything is written.
func TestNilContextIsRefusedBeforeSending(t *testing.T) {
	var sent sentLines
	c := start(t, Config{Trace: sent.trace})
	//lint:ignore SA1012 the point of the test
	_, err := c.Request(nil, "test/echo", nil, nil) //nolint:staticcheck
	require.ErrorContains(t, err, "nil context")
	//lint:ignore SA1012 the point of the test
	err = c.Notify(nil, "notifications/x", nil) //nolint:staticcheck
	require.ErrorContains(t, err, "nil context")
	sent.mu.Lock()
	require.Empty(t, sent.lines)
	sent.mu.Unlock()
	mustCall(t, c, "test/echo", nil) // the connection is fine
	require.False(t, errors.Is(err, jsonrpc.ErrConnectionClosed))
	require.False(t, strings.Contains(err.Error(), "server"))
}

// An answer to a request in flight that carries neither a result nor an
// error ({"jsonrpc":"2.0","id":N}: what JSON.stringify makes of a result
// left undefined) fails that request at once with a -32603 saying so. It
// was ignored as "not JSON-RPC", and its caller waited for its timeout —
// for ever with Timeout(-1), as a subscription's listen request has.
func TestAnswerWithNeitherResultNorErrorFailsTheRequest(t *testing.T) {
	c := start(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	_, err := c.Request(ctx, "test/rawAnswer", map[string]string{"line": `{"jsonrpc":"2.0","id":$ID}`}, &CallOptions{Timeout: -1})
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, jsonrpc.CodeInternalError, e.Code, err.Error())
	require.Contains(t, e.Message, "neither a result nor an error")
	require.Less(t, time.Since(began), 5*time.Second)
	// Ids of another type, or written another way, answer nothing.
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"$ID"}`, `{"jsonrpc":"2.0","id":$ID.0}`, `{"jsonrpc":"2.0","id":null}`,
		`{"jsonrpc":"2.0","id":"$ID","result":{}}`, `{"jsonrpc":"2.0","id":$ID.0,"result":{}}`, `{"jsonrpc":"2.0","id":$IDe0,"result":{}}`,
	} {
		_, err := c.Request(context.Background(), "test/rawAnswer", map[string]string{"line": line}, &CallOptions{Timeout: 300 * time.Millisecond})
		require.ErrorIs(t, err, jsonrpc.ErrTimeout, line)
	}
	mustCall(t, c, "test/echo", nil)
}

// CallOptions.Meta (and so subscription.Open's meta) is raw JSON from the
// caller too: it is checked like params. A multi-line object is
// compacted; anything that is not one JSON object fails at once with a
// local -32602 and nothing is sent. It was spliced into the line
// unchecked, so a second message could be smuggled in after a newline.
func TestCallerMetaNeverBreaksFraming(t *testing.T) {
	var sent sentLines
	c := start(t, Config{Trace: sent.trace, Timeout: 30 * time.Second})
	ctx := context.Background()

	_, err := c.Request(ctx, "test/echo", map[string]int{"a": 1}, &CallOptions{Meta: json.RawMessage("{\n \"m\": 1\r\n}")})
	require.NoError(t, err)
	var seen struct {
		Requests []struct{ Params json.RawMessage } `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, c, "test/requests", map[string]string{"method": "test/echo"}), &seen))
	require.Len(t, seen.Requests, 1)
	require.JSONEq(t, `{"_meta":{"m":1},"a":1}`, string(seen.Requests[0].Params))
	// A one-line Meta that passed is remembered; others are still checked.
	_, err = c.Request(ctx, "test/echo", map[string]int{"a": 2}, &CallOptions{Meta: json.RawMessage(`{"m":2}`)})
	require.NoError(t, err)

	for _, bad := range []string{
		"{\"m\":2}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/smuggled\"}",
		"{}}\n{\"jsonrpc\":\"2.0\",\"id\":424242,\"method\":\"test/exit\"}",
		"{\"a\":1}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/smuggled\"}",
		`{"a":`, `{} {}`, `[1]`, `"s"`, `null`, `1`,
	} {
		for _, params := range []any{map[string]int{"a": 1}, json.RawMessage(`{"_meta":{"mine":1}}`)} {
			_, err := c.Request(ctx, "test/echo", params, &CallOptions{Meta: json.RawMessage(bad)})
			requireInvalidParams(t, err)
			require.Contains(t, err.Error(), "_meta", bad)
		}
	}
	require.NoError(t, json.Unmarshal(mustCall(t, c, "test/requests", map[string]string{"method": "test/echo"}), &seen))
	require.Len(t, seen.Requests, 2, "a request with a bad _meta reached the server")
	res := mustCall(t, c, "test/received", map[string]string{"method": "notifications/smuggled"})
	require.NotContains(t, string(res), "smuggled")
	sent.requireOneValuePerLine(t)
}

// A checked Meta is kept as a copy, unless MetaKept says its bytes never
// change (the Client's encoded _meta): then the connection keeps them as
// they are, and a caller changing a Meta it did not mark cannot slip
// unchecked bytes past the comparison.
func TestCheckedMetaIsCopiedUnlessKept(t *testing.T) {
	c := start(t, Config{})
	ctx := context.Background()
	kept := []byte(`{"k":1}`)
	opts := CallOptions{Meta: kept}
	opts.MetaKept = true
	_, err := c.Request(ctx, "test/echo", nil, &opts)
	require.NoError(t, err)
	require.Same(t, &kept[0], &(*c.metaOK.Load())[0], "a kept Meta was copied")

	mine := []byte(`{"m":1}`)
	_, err = c.Request(ctx, "test/echo", nil, &CallOptions{Meta: mine})
	require.NoError(t, err)
	require.NotSame(t, &mine[0], &(*c.metaOK.Load())[0], "a caller's Meta was kept, not copied")
	copy(mine, "{}\n{}\n")
	_, err = c.Request(ctx, "test/echo", nil, &CallOptions{Meta: mine})
	requireInvalidParams(t, err)
}

// A Sent callback that panics leaves nothing behind: the request, not
// yet queued, leaves the table and the panic continues in the caller. It
// stayed in the table for the connection's life (InFlight counted it,
// and every later lone request took the queued path, as with company).
func TestSentPanicLeavesNoRequestInFlight(t *testing.T) {
	c := start(t, Config{})
	func() {
		defer func() { require.Equal(t, "sent", recover()) }()
		_, _ = c.Request(context.Background(), "test/echo", nil, &CallOptions{Sent: func(int64) { panic("sent") }})
	}()
	require.Equal(t, 0, c.inFlight())
	require.False(t, c.table.company())
	mustCall(t, c, "test/echo", nil)
	res := mustCall(t, c, "test/requests", map[string]string{"method": "test/echo"})
	require.Equal(t, 1, strings.Count(string(res), `"method":"test/echo"`), "the panicked request was sent: %s", res)
}

// A ctx already done when Request or Notify is called sends nothing: the
// caller gets the ctx's error at once. The request used to be written
// (the server ran it) and then cancelled with notifications/cancelled.
func TestDoneContextSendsNothing(t *testing.T) {
	c := start(t, Config{})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, ctx := range []context.Context{cancelled, expired} {
		_, err := c.Request(ctx, "test/echo", map[string]int{"x": 1}, nil)
		require.ErrorIs(t, err, ctx.Err())
		require.Contains(t, err.Error(), "nothing was sent")
		err = c.Notify(ctx, "notifications/x", nil)
		require.ErrorIs(t, err, ctx.Err())
	}
	require.Equal(t, 0, c.inFlight())
	require.JSONEq(t, `{"requests":[]}`, string(mustCall(t, c, "test/requests", map[string]string{"method": "test/echo"})))
	for _, m := range []string{"notifications/x", "notifications/cancelled"} {
		require.JSONEq(t, `{"messages":[]}`, string(mustCall(t, c, "test/received", map[string]string{"method": m})), m)
	}
}
