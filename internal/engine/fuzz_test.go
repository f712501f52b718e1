package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/test/testutil"
)

// routeHarness is a Conn with no process: just what route touches (the
// request table, a logger, and an actor that swallows what the reader
// posts to the connection actor).
type routeHarness struct {
	c      *Conn
	posted *postCounter
}

type postCounter struct {
	mu sync.Mutex
	n  int
}

func newRouteHarness(f testing.TB) *routeHarness {
	sys := snodoactor.Shared()
	pc := &postCounter{}
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch ctx.Message().(type) {
		case *serverRequestMsg, *serverCancelMsg:
			pc.mu.Lock()
			pc.n++
			pc.mu.Unlock()
		}
	}))
	f.Cleanup(func() { testutil.StopActor(f, sys, pid, 10*time.Second) })
	c := &Conn{
		cfg:    Config{Logger: slog.New(slog.DiscardHandler), MaxLineBytes: limits.MaxLineBytes},
		system: sys,
		pid:    pid,
		table:  newTable(),
	}
	return &routeHarness{c: c, posted: pc}
}

// FuzzRoute feeds arbitrary lines to the reader's router with three
// requests in flight (ids 1, 2 with progress, 3 a stream). It must not
// panic; only a response (or, for the stream, the server's
// notifications/cancelled) may complete a request, each at most once;
// responses to other ids are ignored; progress queues stay bounded; and
// results never alias the reader's buffer.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":1,"result":1}` + "\n" + `{"jsonrpc":"2.0","id":1,"result":2}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":null}`,
		`{"jsonrpc":"2.0","id":1,"error":null}`,
		`{"jsonrpc":"2.0","id":1,"error":"boom"}`,
		`{"jsonrpc":"2.0","id":2}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","id":999999,"result":{}}`,
		`{"jsonrpc":"2.0","id":"1","result":{}}`,
		`{"jsonrpc":"2.0","id":-1,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1,"total":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1e999}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":3}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"bye"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}`,
		`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":null,"method":"roots/list"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":{\"a\"\r:\r1},\"method\":\"roots/list\"}",
		`{"jsonrpc":"2.0","method":"notifications/message","params":[1,2]}`,
		"not json\n\n[1]\n{}",
	} {
		f.Add([]byte(s))
	}
	h := newRouteHarness(f)
	f.Fuzz(func(t *testing.T, input []byte) {
		c := h.c
		c.table = newTable()
		var streamed int
		calls := []*call{
			{wake: make(chan struct{}, 1)},
			{wake: make(chan struct{}, 1), wantProgress: true},
			{wake: make(chan struct{}, 1), stream: func(string, json.RawMessage) { streamed++ }},
		}
		for i, cl := range calls {
			if id, err := c.table.add(cl, 0, 0); err != nil || id != int64(i+1) {
				t.Fatalf("add: id %d, %v", id, err)
			}
		}
		mayComplete := map[int64]bool{}
		lines := bytes.Split(input, []byte{'\n'})
		for _, line := range lines {
			if env, err := jsonrpc.Scan(line); err == jsonrpc.ErrNoOutcome {
				if id, ok := env.IntID(); ok {
					mayComplete[id] = true // failed with a -32603
				}
			} else if err == nil {
				switch env.Kind {
				case jsonrpc.KindResponse:
					if id, ok := env.IntID(); ok {
						mayComplete[id] = true
					}
				case jsonrpc.KindNotification:
					mayComplete[3] = true // the stream's teardown, when the params say so
				case jsonrpc.KindRequest:
					// The answer echoes the server's id: still one JSON
					// value on one line.
					id, err := jsonrpc.OneLine(env.ID) // as routeServerRequest does
					if err != nil {
						t.Fatalf("Scan accepted an id that is not JSON: %q", env.ID)
					}
					for _, ans := range [][]byte{
						jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no"}),
						jsonrpc.AppendResult(nil, id, []byte(`{}`)),
					} {
						body, ok := bytes.CutSuffix(ans, []byte("\n"))
						if !ok || !json.Valid(body) || bytes.ContainsAny(body, "\r\n") {
							t.Fatalf("answer to %q is not one JSON value on one line: %q", line, ans)
						}
					}
				}
			}
			c.route(line, false)
			if n := len(calls[1].progress); n > maxQueuedProgress {
				t.Fatalf("%d queued progress updates", n)
			}
			var queued int
			for _, p := range calls[1].progress {
				queued += len(p.Message)
			}
			if queued != calls[1].progressBytes || len(calls[1].progress) > 1 && queued > maxQueuedProgressBytes {
				t.Fatalf("%d updates hold %d bytes of messages (counted %d)", len(calls[1].progress), queued, calls[1].progressBytes)
			}
		}
		snap := make([][]byte, len(calls))
		for i, cl := range calls {
			snap[i] = bytes.Clone(cl.result)
		}
		for i := range input { // results must be copies, not views of the buffer
			input[i] = '#'
		}
		done := 0
		for i, cl := range calls {
			id := int64(i + 1)
			if !cl.done.Load() {
				continue
			}
			done++
			if !mayComplete[id] {
				t.Fatalf("request %d completed without a response to it", id)
			}
			if !bytes.Equal(snap[i], cl.result) {
				t.Fatalf("request %d: result %q aliases the input", id, snap[i])
			}
			if cl.err != nil {
				var e *jsonrpc.Error
				if !errors.As(cl.err, &e) && !errors.Is(cl.err, errStreamCancelled) {
					t.Fatalf("request %d: error %T %v", id, cl.err, cl.err)
				}
				if e != nil && e.Code == 0 && e.Message == "" {
					t.Fatalf("request %d: an empty error object %s", id, fmt.Sprint(e))
				}
			}
		}
		if got := c.table.inFlight(); got != len(calls)-done {
			t.Fatalf("in flight %d, want %d", got, len(calls)-done)
		}
	})
}

// A response carrying "error":null beside its result (JSON-RPC 1.0
// style) is a success; an error member that is not an error object is a
// malformed answer, reported as -32603, never as an empty error.
func TestResponseErrorMember(t *testing.T) {
	h := newRouteHarness(t)
	for _, tc := range []struct {
		line, result string
		code         int
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"ok":true},"error":null}`, `{"ok":true}`, 0},
		{`{"jsonrpc":"2.0","id":1,"error":null}`, "", jsonrpc.CodeInternalError},
		{`{"jsonrpc":"2.0","id":1,"error":{}}`, "", jsonrpc.CodeInternalError},
		{`{"jsonrpc":"2.0","id":1,"error":"boom"}`, "", jsonrpc.CodeInternalError},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"},"result":null}`, "", -32601},
	} {
		h.c.table = newTable()
		cl := &call{wake: make(chan struct{}, 1)}
		_, _ = h.c.table.add(cl, 0, 0)
		h.c.route([]byte(tc.line), false)
		if !cl.done.Load() {
			t.Fatalf("%s: not delivered", tc.line)
		}
		var e *jsonrpc.Error
		if tc.code == 0 {
			if cl.err != nil || string(cl.result) != tc.result {
				t.Errorf("%s: got %s, %v", tc.line, cl.result, cl.err)
			}
		} else if !errors.As(cl.err, &e) || e.Code != tc.code {
			t.Errorf("%s: got %v, want code %d", tc.line, cl.err, tc.code)
		}
	}
}
