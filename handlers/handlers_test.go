package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/test/testutil"
)

// scripted answers according to params.do, the way a real handler might.
func scripted(_ context.Context, req *handlers.Request) (any, error) {
	var p struct{ Do string }
	_ = json.Unmarshal(req.Params, &p)
	switch p.Do {
	case "result":
		return map[string]any{"roots": []map[string]string{{"uri": "file:///tmp"}}, "method": req.Method}, nil
	case "nil":
		return nil, nil
	case "rpcError":
		return nil, &jsonrpc.Error{Code: 4242, Message: "user declined", Data: json.RawMessage(`{"why":"test"}`)}
	case "wrappedError":
		return nil, fmt.Errorf("asking the user: %w", &jsonrpc.Error{Code: -32602, Message: "bad schema"})
	case "plainError":
		return nil, errors.New("disk on fire")
	case "panic":
		panic("boom")
	case "unmarshalable":
		return func() {}, nil
	}
	return nil, fmt.Errorf("unknown do %q", p.Do)
}

func TestHandlerAnswers(t *testing.T) {
	logs := &testutil.LogRecorder{}
	c := start(t, engine.Config{Handler: scripted, Logger: logs.Logger()})
	cases := []struct {
		do      string
		code    int
		result  string
		message string
	}{
		{do: "result", result: `{"roots":[{"uri":"file:///tmp"}],"method":"sampling/createMessage"}`},
		{do: "nil", result: `null`},
		{do: "rpcError", code: 4242, message: "user declined"},
		{do: "wrappedError", code: -32602, message: "bad schema"},
		{do: "plainError", code: jsonrpc.CodeInternalError, message: "disk on fire"},
		{do: "panic", code: jsonrpc.CodeInternalError, message: "panicked"},
		{do: "unmarshalable", code: jsonrpc.CodeInternalError, message: "cannot be marshalled"},
		{do: "result", result: `{"roots":[{"uri":"file:///tmp"}],"method":"sampling/createMessage"}`}, // after a panic
	}
	for _, tc := range cases {
		rs := ask(t, c, map[string]any{"method": "sampling/createMessage", "params": map[string]string{"do": tc.do}})
		require.Len(t, rs, 1, tc.do)
		r := rs[0]
		assert.Regexp(t, `^"s[0-9]+"$`, string(r.ID), "%s: the answer carries the server's id", tc.do)
		if tc.code == 0 {
			assert.Nil(t, r.Error, tc.do)
			assert.JSONEq(t, tc.result, string(r.Result), tc.do)
			continue
		}
		require.NotNil(t, r.Error, tc.do)
		assert.Equal(t, tc.code, r.Error.Code, tc.do)
		assert.Contains(t, r.Error.Message, tc.message, tc.do)
		if tc.do == "rpcError" {
			assert.JSONEq(t, `{"why":"test"}`, string(r.Error.Data), "the error's data is sent")
		}
	}
	assert.Equal(t, 1, logs.Count("handler panicked"), "the panic is logged once")
	_, err := c.Request(context.Background(), "test/echo", map[string]int{"still": 1}, nil)
	require.NoError(t, err, "the connection carries on")
}

func TestNoHandlerAnswersMethodNotFound(t *testing.T) {
	c := start(t, engine.Config{})
	for _, method := range []string{"sampling/createMessage", "roots/list", "elicitation/create", "ping"} {
		rs := ask(t, c, map[string]any{"method": method, "count": 2, "concurrent": true})
		for _, r := range rs {
			assert.Equal(t, jsonrpc.CodeMethodNotFound, codeOf(r), method)
			assert.Contains(t, r.Error.Message, method)
		}
	}
}

func TestBoundRejectsAtOnceAndRunsUpToIt(t *testing.T) {
	logs := &testutil.LogRecorder{}
	release := make(chan struct{})
	var running, peak, calls atomic.Int32
	h := func(ctx context.Context, req *handlers.Request) (any, error) {
		calls.Add(1)
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		return map[string]bool{"ok": true}, nil
	}
	c := start(t, engine.Config{Handler: h, MaxServerRequests: 2, Logger: logs.Logger()})
	answers := askAsync(t, c, map[string]any{"count": 10, "concurrent": true})
	// Eight requests are answered -32603 while two handlers still block.
	testutil.Eventually(t, func() bool { return logs.Count("over the bound") == 8 }, 10*time.Second, "8 rejections")
	// The two admitted requests hold their slots; their handlers may not
	// have started yet (under load they had not: 0 running, then peak 1).
	testutil.Eventually(t, func() bool { return running.Load() == 2 }, 10*time.Second, "two handlers run at the same time")
	close(release)
	rs := testutil.Receive(t, answers, 10*time.Second, "answers")
	var ok, rejected int
	for _, r := range rs {
		switch codeOf(r) {
		case 0:
			ok++
		case jsonrpc.CodeInternalError:
			rejected++
			assert.Contains(t, r.Error.Message, "limit")
		default:
			t.Errorf("unexpected answer %+v", r)
		}
	}
	assert.Equal(t, 2, ok)
	assert.Equal(t, 8, rejected)
	assert.Equal(t, int32(2), calls.Load(), "rejected requests never run the handler")
	assert.Equal(t, int32(2), peak.Load())
	// The slots are free again.
	testutil.Eventually(t, func() bool {
		rs := ask(t, c, map[string]any{"count": 2, "concurrent": true})
		return codeOf(rs[0]) == 0 && codeOf(rs[1]) == 0
	}, 5*time.Second, "slots freed after the handlers returned")
}

func TestHandlersRunConcurrentlyUpToTheDefaultBound(t *testing.T) {
	const n = limits.MaxServerRequests
	var arrived atomic.Int32
	all := make(chan struct{})
	h := func(ctx context.Context, req *handlers.Request) (any, error) {
		if arrived.Add(1) == n {
			close(all)
		}
		select { // a barrier: only passes if all n run at once
		case <-all:
			return "together", nil
		case <-time.After(5 * time.Second):
			return nil, errors.New("the other handlers never came")
		}
	}
	c := start(t, engine.Config{Handler: h})
	for _, r := range ask(t, c, map[string]any{"count": n, "concurrent": true}) {
		assert.JSONEq(t, `"together"`, string(r.Result), "%+v", r.Error)
	}
}

func TestMalformedServerRequests(t *testing.T) {
	var calls atomic.Int32
	h := func(ctx context.Context, req *handlers.Request) (any, error) {
		calls.Add(1)
		return map[string]json.RawMessage{"params": req.Params}, nil
	}
	c := start(t, engine.Config{Handler: h})
	cases := []struct {
		line string
		code int
		id   string
	}{
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"roots/list"}`, jsonrpc.CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":[1,2],"method":"roots/list"}`, jsonrpc.CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":null,"method":"roots/list"}`, jsonrpc.CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":true,"method":"roots/list"}`, jsonrpc.CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":"p1","method":"roots/list","params":"text"}`, jsonrpc.CodeInvalidParams, `"p1"`},
		{`{"jsonrpc":"2.0","id":"p2","method":"roots/list","params":42}`, jsonrpc.CodeInvalidParams, `"p2"`},
		{`{"jsonrpc":"2.0","id":"p3","method":"roots/list","params":null}`, jsonrpc.CodeInvalidParams, `"p3"`},
	}
	for _, tc := range cases {
		rs := ask(t, c, map[string]any{"rawRequest": tc.line, "timeoutMs": 5000})
		require.Len(t, rs, 1)
		assert.Equal(t, tc.code, codeOf(rs[0]), tc.line)
		assert.JSONEq(t, tc.id, string(rs[0].ID), tc.line)
	}
	assert.Zero(t, calls.Load(), "no handler ran for a malformed request")
	// Well-formed odd cases do run: a numeric id, array params, no params.
	rs := ask(t, c, map[string]any{"rawRequest": `{"jsonrpc":"2.0","id":7,"method":"roots/list","params":[1,2]}`})
	assert.JSONEq(t, `7`, string(rs[0].ID))
	assert.JSONEq(t, `{"params":[1,2]}`, string(rs[0].Result))
	rs = ask(t, c, map[string]any{"rawRequest": `{"jsonrpc":"2.0","id":-3,"method":"ping"}`})
	assert.JSONEq(t, `-3`, string(rs[0].ID))
	assert.JSONEq(t, `{"params":null}`, string(rs[0].Result))
	assert.Equal(t, int32(2), calls.Load())
}

func TestFloodNeverExceedsTheBound(t *testing.T) {
	const max, flood = 4, 2000
	var running, peak, peakGoroutines atomic.Int32
	h := func(ctx context.Context, req *handlers.Request) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		g := int32(runtime.NumGoroutine())
		for p := peakGoroutines.Load(); g > p && !peakGoroutines.CompareAndSwap(p, g); p = peakGoroutines.Load() {
		}
		time.Sleep(time.Millisecond)
		return "ok", nil
	}
	c := start(t, engine.Config{Handler: h, MaxServerRequests: max})
	base := int32(runtime.NumGoroutine())
	rs := ask(t, c, map[string]any{"count": flood, "concurrent": true, "timeoutMs": 30000})
	require.Len(t, rs, flood)
	var ok, rejected int
	for _, r := range rs {
		switch codeOf(r) {
		case 0:
			ok++
		case jsonrpc.CodeInternalError:
			rejected++
		default:
			t.Fatalf("unexpected answer %+v", r)
		}
	}
	t.Logf("flood of %d: %d handled, %d rejected, peak %d handlers, peak %d goroutines (base %d)",
		flood, ok, rejected, peak.Load(), peakGoroutines.Load(), base)
	assert.Equal(t, flood, ok+rejected, "every request is answered")
	assert.GreaterOrEqual(t, ok, max)
	assert.LessOrEqual(t, peak.Load(), int32(max))
	// Per running handler: its goroutine and at most one mailbox goroutine.
	assert.LessOrEqual(t, peakGoroutines.Load(), base+2*max+8, "the client does not grow with the flood")
}
