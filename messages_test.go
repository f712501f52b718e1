package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// inbox is an actor that sends what it is told to and collects what it
// receives.
type inbox struct {
	pid *protoactor.PID
	got chan any
}

type sendTo struct {
	to  *protoactor.PID
	msg any
}

func newInbox(t *testing.T) *inbox {
	sys := snodoactor.Shared()
	in := &inbox{got: make(chan any, 64)}
	in.pid = sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *sendTo:
			ctx.Request(msg.to, msg.msg)
		case *Reply, *ToolReply, *Progress, *Closed, *Connected:
			in.got <- msg
		}
	}))
	t.Cleanup(func() { sys.Root.Stop(in.pid) })
	return in
}

func (in *inbox) send(to *protoactor.PID, msg any) {
	snodoactor.Shared().Root.Send(in.pid, &sendTo{to: to, msg: msg})
}

func (in *inbox) next(t *testing.T) any {
	t.Helper()
	return testutil.Receive(t, in.got, 10*time.Second, "a message")
}

func TestCallMessagesGetOneReplyEach(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"}, elicitCaps, WithServerRequestHandler(nameHandler(new(atomic.Int32), "Ada")))
	in := newInbox(t)

	in.send(c.PID(), &Call{Method: "test/echo", Params: map[string]int{"n": 1}, Tag: "one"})
	r := in.next(t).(*Reply)
	assert.Equal(t, "one", r.Tag)
	require.NoError(t, r.Err)
	var echoed struct{ N int }
	require.NoError(t, json.Unmarshal(r.Result, &echoed))
	assert.Equal(t, 1, echoed.N)

	// Progress as messages, in order, before the reply.
	in.send(c.PID(), &Call{Method: "test/progress", Params: map[string]int{"count": 3}, Tag: 2, Progress: true})
	var steps []float64
	for {
		m := in.next(t)
		if p, ok := m.(*Progress); ok {
			assert.Equal(t, 2, p.Tag)
			steps = append(steps, p.Progress)
			continue
		}
		require.NoError(t, m.(*Reply).Err)
		break
	}
	assert.Len(t, steps, 3)

	// A raw call is raw; a ToolCall completes the input rounds.
	in.send(c.PID(), &Call{Method: "tools/call", Params: map[string]any{"name": "ask"}, Tag: "raw"})
	r = in.next(t).(*Reply)
	require.NoError(t, r.Err)
	var rt struct {
		ResultType string `json:"resultType"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &rt))
	assert.Equal(t, "input_required", rt.ResultType)
	in.send(c.PID(), &ToolCall{Name: "ask", Tag: "typed"})
	tr := in.next(t).(*ToolReply)
	require.NoError(t, tr.Err)
	assert.Equal(t, "Hello, Ada!", tr.Result.Text())

	// The server's error comes back as the Reply's Err.
	in.send(c.PID(), &Call{Method: "no/such", Tag: 5})
	r = in.next(t).(*Reply)
	var e *Error
	require.ErrorAs(t, r.Err, &e)
	assert.Equal(t, CodeMethodNotFound, e.Code)

	// After Close: a -32000, from the stopped actor's dead letters.
	require.NoError(t, c.Close())
	in.send(c.PID(), &Call{Method: "test/echo", Tag: "late"})
	r = in.next(t).(*Reply)
	assert.Equal(t, "late", r.Tag)
	assert.ErrorIs(t, r.Err, ErrConnectionClosed)
	in.send(c.PID(), &ToolCall{Name: "echo", Tag: "late tool"})
	tr = in.next(t).(*ToolReply)
	assert.ErrorIs(t, tr.Err, ErrConnectionClosed)
}

// A call in flight when the server dies is answered with -32000.
func TestCallInFlightWhenTheServerDies(t *testing.T) {
	c := dialTest(t, nil)
	in := newInbox(t)
	in.send(c.PID(), &Call{Method: "test/crash", Params: map[string]int{"code": 3}, Tag: "x"})
	r := in.next(t).(*Reply)
	assert.ErrorIs(t, r.Err, ErrServerExited)
}

// The owner actor is told when its connection stops, and why.
func TestOwnerGetsClosed(t *testing.T) {
	in := newInbox(t)
	cmd, args := testutil.Server(t)
	ConnectTo(context.Background(), snodoactor.Shared(), in.pid, cmd, args)
	conn := in.next(t).(*Connected)
	require.NoError(t, conn.Err)
	_, _ = conn.Client.Request(t.Context(), "test/crash", map[string]int{"code": 4})
	closed := in.next(t).(*Closed)
	assert.Same(t, conn.Client, closed.Client)
	assert.ErrorIs(t, closed.Err, ErrServerExited)
	<-conn.Client.Done()
}

// An actor of one's own fronts a client with a callHandler; over its
// bound, a call is answered at once with ErrTooManyCalls.
func TestCallHandlerBound(t *testing.T) {
	c := dialTest(t, nil)
	h := &callHandler{Calls: c.Calls, Max: 1}
	sys := snodoactor.Shared()
	front := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) { h.Handle(ctx) }))
	defer sys.Root.Stop(front)
	in := newInbox(t)
	in.send(front, &Call{Method: "test/sleep", Params: map[string]int{"ms": 300}, Tag: "slow"})
	in.send(front, &Call{Method: "test/echo", Tag: "over"})
	first := in.next(t).(*Reply)
	assert.Equal(t, "over", first.Tag)
	assert.ErrorIs(t, first.Err, ErrTooManyCalls)
	var e *Error
	require.ErrorAs(t, first.Err, &e)
	assert.Equal(t, CodeInternalError, e.Code)
	second := in.next(t).(*Reply)
	assert.Equal(t, "slow", second.Tag)
	require.NoError(t, second.Err)
	// The slot is free by the time the reply arrives: a sender that calls
	// again as soon as it is answered is never refused.
	for i := range 300 {
		in.send(front, &Call{Method: "test/echo", Tag: i})
		require.NoError(t, in.next(t).(*Reply).Err, "call %d: the slot is free again", i)
	}
}

// A call whose own OnProgress panics (or whose requester does) is answered
// with a -32603 saying so; the panic never takes the program down.
func TestCallMessagePanicIsAnswered(t *testing.T) {
	c := dialTest(t, nil)
	in := newInbox(t)
	boom := []RequestOption{OnProgress(func(Progress) { panic("boom") })}
	in.send(c.PID(), &Call{Method: "test/progress", Params: map[string]int{"count": 2}, Tag: "raw", Options: boom})
	r := in.next(t).(*Reply)
	assert.Equal(t, "raw", r.Tag)
	var e *Error
	require.ErrorAs(t, r.Err, &e)
	assert.Equal(t, CodeInternalError, e.Code)
	assert.ErrorContains(t, r.Err, "boom")

	h := &callHandler{} // no requester
	sys := snodoactor.Shared()
	front := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) { h.Handle(ctx) }))
	defer sys.Root.Stop(front)
	in.send(front, &ToolCall{Name: "echo", Tag: "nil R"})
	tr := in.next(t).(*ToolReply)
	assert.Equal(t, "nil R", tr.Tag)
	require.ErrorIs(t, tr.Err, errNoRequester)
	require.ErrorAs(t, tr.Err, &e)
	assert.Equal(t, CodeInternalError, e.Code)

	require.NoError(t, c.Ping(t.Context()), "the connection carries on")
}

// floodCalls has an actor send n call messages to to, calling during(i)
// before the i-th, and returns how the replies went, failing t unless
// every call got exactly one reply.
func floodCalls(t *testing.T, to *protoactor.PID, n, sleepMs int, during func(i int)) map[string]int {
	t.Helper()
	sys := snodoactor.Shared()
	got := make(chan *Reply, 2*n)
	sender := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case int:
			for i := range msg {
				during(i)
				ctx.Request(to, &Call{Method: "test/sleep", Params: map[string]int{"ms": sleepMs}, Tag: i})
			}
		case *Reply:
			got <- msg
		}
	}))
	defer sys.Root.Stop(sender)
	sys.Root.Send(sender, n)
	seen := make(map[int]int, n)
	counts := map[string]int{}
	deadline := time.After(30 * time.Second)
	for len(seen) < n {
		select {
		case r := <-got:
			seen[r.Tag.(int)]++
			switch {
			case r.Err == nil:
				counts["ok"]++
			case errors.Is(r.Err, ErrTooManyCalls):
				counts["too many"]++
			case errors.Is(r.Err, ErrConnectionClosed):
				counts["closed"]++
			default:
				counts[r.Err.Error()]++
			}
		case <-deadline:
			t.Fatalf("%d of %d calls answered: %v", len(seen), n, counts)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("a second reply to call %v", r.Tag)
	case <-time.After(200 * time.Millisecond):
	}
	for tag, k := range seen {
		require.Equal(t, 1, k, "replies to call %d", tag)
	}
	return counts
}

// A flood of call messages past the bound, then one with Close in the
// middle of it: every call gets exactly one reply, also those still in
// the connection actor's mailbox when it stops (protoactor-go drops
// those; life.Life (internal/life) makes them dead letters, which answerDeadCalls
// answers).
func TestCallFloodPastTheBoundAndClose(t *testing.T) {
	c := dialTest(t, nil)
	counts := floodCalls(t, c.PID(), 2*defaultMaxCallMessages, 500, func(int) {})
	assert.Equal(t, 2*defaultMaxCallMessages, counts["ok"]+counts["too many"], "%v", counts)
	assert.Positive(t, counts["too many"], "%v", counts)
	assert.Positive(t, counts["ok"], "%v", counts)
	t.Logf("past the bound: %v", counts)

	counts = floodCalls(t, c.PID(), 3000, 50, func(i int) {
		if i == 1500 {
			go c.Close()
		}
	})
	assert.Equal(t, 3000, counts["ok"]+counts["too many"]+counts["closed"], "%v", counts)
	t.Logf("with Close: %v", counts)
}

// BenchmarkCallMessage is one *Call round trip through the connection
// actor, against BenchmarkCallMethod, the same request as a method call.
func BenchmarkCallMessage(b *testing.B) {
	c := benchClient(b)
	sys := snodoactor.Shared()
	replies := make(chan *Reply, 1)
	asker := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *Call:
			ctx.Request(c.PID(), msg)
		case *Reply:
			replies <- msg
		}
	}))
	defer sys.Root.Stop(asker)
	call := &Call{Method: "test/echo", Params: json.RawMessage(`{"n":1}`)}
	b.ReportAllocs()
	for b.Loop() {
		sys.Root.Send(asker, call)
		if r := <-replies; r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkCallMethod(b *testing.B) {
	c := benchClient(b)
	params := json.RawMessage(`{"n":1}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Request(context.Background(), "test/echo", params); err != nil {
			b.Fatal(err)
		}
	}
}

func benchClient(b *testing.B) *Client {
	b.Helper()
	cmd, args := testutil.Server(b)
	c, err := Connect(context.Background(), cmd, args)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(); <-c.Done() })
	return c
}

// answerDeadCalls keeps no actor system alive: a program that makes
// systems and shuts them down (one per tenant, per test) gets them back.
func TestAnswerDeadCallsDoesNotPinTheSystem(t *testing.T) {
	sys := snodoactor.NewQuietSystem(nil)
	answerDeadCalls(sys)
	answerDeadCalls(sys) // idempotent
	answerDeadCalls(nil) // nothing to watch
	gone := weak.Make(sys)
	sys.Shutdown()
	sys = nil //nolint:ineffassign,wastedassign // drop the last reference
	testutil.Eventually(t, func() bool {
		runtime.GC()
		return gone.Value() == nil
	}, 5*time.Second, "the actor system is never collected after answerDeadCalls")
}

// A nil *Call or *ToolCall (a typed nil in an interface: a router's
// To.Call, say) is answered with an error; it used to panic the actor
// that owns the connection or pool, stopping it for every caller.
func TestNilCallMessagesAreAnswered(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"})
	in := newInbox(t)
	in.send(c.PID(), (*Call)(nil))
	r := in.next(t).(*Reply)
	require.ErrorContains(t, r.Err, "nil *snodo.Call")
	in.send(c.PID(), (*ToolCall)(nil))
	tr := in.next(t).(*ToolReply)
	require.ErrorContains(t, tr.Err, "nil *snodo.ToolCall")
	in.send(c.PID(), &Call{Method: "test/echo", Tag: "after"})
	r = in.next(t).(*Reply)
	require.NoError(t, r.Err)
	assert.Equal(t, "after", r.Tag)
}

// Tool arguments that are not a JSON object are refused locally, with a
// -32602 wrapping ErrInvalidParams, and nothing is sent: by CallTool and,
// through it, by a *ToolCall message, in both eras.
func TestToolArgsThatAreNoObjectAreRefusedLocally(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			c := dialTest(t, []string{"-era", era})
			in := newInbox(t)
			for _, args := range []any{42, "text", []int{1}, json.RawMessage(`[1]`), json.RawMessage(" 7 ")} {
				_, err := c.CallTool(t.Context(), "echo", args)
				requireLocalInvalidArgs(t, err)
				in.send(c.PID(), &ToolCall{Name: "echo", Args: args, Tag: "no object"})
				tr := in.next(t).(*ToolReply)
				assert.Equal(t, "no object", tr.Tag)
				requireLocalInvalidArgs(t, tr.Err)
			}
			raw, err := c.Request(t.Context(), "test/requests", map[string]string{"method": "tools/call"})
			require.NoError(t, err)
			assert.JSONEq(t, `{"requests":[]}`, string(raw), "nothing may be sent")
			// Objects and no arguments still go through.
			for _, args := range []any{nil, json.RawMessage(`null`), json.RawMessage(` {"message":"hi"}`), map[string]string{"message": "hi"}} {
				_, err := c.CallTool(t.Context(), "echo", args)
				require.NoError(t, err, "%v", args)
			}
		})
	}
}

func requireLocalInvalidArgs(t *testing.T, err error) {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Local(), "%v", err)
	assert.Equal(t, CodeInvalidParams, e.Code)
	assert.ErrorIs(t, err, ErrInvalidParams)
	assert.Contains(t, err.Error(), "arguments")
}

// Arguments json.Marshal refuses fail the same way, before anything is sent.
func TestToolArgsThatCannotBeMarshalledAreRefusedLocally(t *testing.T) {
	c := dialTest(t, nil)
	_, err := c.CallTool(t.Context(), "echo", map[string]any{"f": func() {}})
	requireLocalInvalidArgs(t, err)
	assert.Contains(t, err.Error(), "cannot be marshalled")
}

// Arguments as []byte are raw JSON, as Request takes them (not a byte
// string json.Marshal would send as base64), for CallTool and *ToolCall.
func TestToolArgsAsBytesAreRawJSON(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			c := dialTest(t, []string{"-era", era})
			res, err := c.CallTool(t.Context(), "echo", []byte(` {"message":"hi"}`))
			require.NoError(t, err)
			assert.Equal(t, "hi", res.Text())
			in := newInbox(t)
			in.send(c.PID(), &ToolCall{Name: "echo", Args: []byte(`{"message":"as a message"}`), Tag: "bytes"})
			tr := in.next(t).(*ToolReply)
			require.NoError(t, tr.Err)
			assert.Equal(t, "as a message", tr.Result.Text())
			for _, args := range [][]byte{nil, {}, []byte("null")} {
				_, err := c.CallTool(t.Context(), "echo", args)
				require.NoError(t, err, "%q: no arguments", args)
			}
			_, err = c.CallTool(t.Context(), "echo", []byte(`[1]`))
			requireLocalInvalidArgs(t, err)
		})
	}
}

// A client given an Origin keeps it on the replies to calls sent once it
// has stopped, as on its live ones (issue 39: they carried none).
func TestRepliesOfAStoppedClientCarryItsOrigin(t *testing.T) {
	o := Origin{Server: "files", Member: "files-2"}
	c := dialTest(t, nil, WithOrigin(o))
	in := newInbox(t)
	in.send(c.PID(), &Call{Method: "test/echo", Params: map[string]int{"n": 1}, Tag: "live"})
	r := in.next(t).(*Reply)
	require.NoError(t, r.Err)
	assert.Equal(t, o, r.Origin)

	require.NoError(t, c.Close())
	in.send(c.PID(), &Call{Method: "test/echo", Tag: "late"})
	r = in.next(t).(*Reply)
	assert.ErrorIs(t, r.Err, ErrConnectionClosed)
	assert.Equal(t, o, r.Origin)
	in.send(c.PID(), &ToolCall{Name: "echo", Tag: "late tool"})
	tr := in.next(t).(*ToolReply)
	assert.ErrorIs(t, tr.Err, ErrConnectionClosed)
	assert.Equal(t, o, tr.Origin)
}
