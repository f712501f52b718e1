package remote

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// legacyHost serves a pool of the test server (both eras: connected in
// the modern one) under name, with ServeLegacy starting its legacy-era
// twin; starts counts the twin's starts.
func legacyHost(t *testing.T, e *natsembed.Server, name string, starts *atomic.Int32) *Host {
	t.Helper()
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	require.Equal(t, snodo.EraModern, p.Era())
	start := func(ctx context.Context, opts ...snodo.Option) (*supervisor.Pool, error) {
		starts.Add(1)
		return supervisor.NewPool(ctx, snodo.Command(cmd, args...), 1, supervisor.WithConnectOptions(opts...))
	}
	h, err := NewHost(context.Background(), e.URL(), Serve(name, p), ServeLegacy(name, start))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// A legacy-era caller's call runs on the host's legacy-era connection,
// started by the first such call, and the elicitation its server sends
// mid-call is answered by the caller's own handler; a modern caller of
// the same name neither starts it nor is served by it.
func TestLegacyCallerAnswersItsServersRequests(t *testing.T) {
	e := natsServer(t)
	var starts atomic.Int32
	legacyHost(t, e, "ts", &starts)
	var asked atomic.Int32
	handler := func(_ context.Context, req *snodo.ServerRequest) (any, error) {
		asked.Add(1)
		if req.Method != "elicitation/create" {
			return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: req.Method}
		}
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	modern := client(t, e, "ts", WithConnectOptions(snodo.WithServerRequestHandler(handler)))
	res, err := modern.CallTool(ctxFor(t, 30*time.Second), "echo", map[string]any{"message": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Text())
	assert.Zero(t, starts.Load(), "a modern call starts no legacy-era connection")

	legacy := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(handler)))
	assert.Equal(t, snodo.EraLegacy, legacy.Era())
	// Raw requests: no input_required round here, the server asks mid-call.
	raw, err := legacy.Request(ctxFor(t, 30*time.Second), "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"rounds": 2}})
	require.NoError(t, err)
	assert.Contains(t, string(raw), "Hello, Ada!")
	assert.Equal(t, int32(2), asked.Load(), "both rounds were asked of the caller's handler")
	raw, err = legacy.Request(ctxFor(t, 30*time.Second), "tools/call", map[string]any{"name": "ask"})
	require.NoError(t, err)
	assert.Contains(t, string(raw), "Hello, Ada!")
	assert.Equal(t, int32(1), starts.Load(), "the legacy-era connection started once")
}

// A legacy caller without a handler: the server hears -32601 and says so
// in its result; nothing hangs.
func TestLegacyCallerWithoutHandler(t *testing.T) {
	e := natsServer(t)
	var starts atomic.Int32
	legacyHost(t, e, "ts", &starts)
	legacy := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy)))
	raw, err := legacy.Request(ctxFor(t, 30*time.Second), "tools/call", map[string]any{"name": "ask"})
	require.NoError(t, err)
	assert.Contains(t, string(raw), "elicitation failed")
	assert.Contains(t, string(raw), "no handler")
}

// A legacy caller's logs: after logging/setLevel (kept by the client),
// the log messages its call's server sends at or above that level reach
// its notification handler before the call returns; below it, or
// without a level, none do.
func TestLegacyCallerGetsItsCallsLogs(t *testing.T) {
	e := natsServer(t)
	var starts atomic.Int32
	legacyHost(t, e, "ts", &starts)
	var mu sync.Mutex
	var logs []string
	notify := func(_ context.Context, n *snodo.Notification) {
		mu.Lock()
		defer mu.Unlock()
		var p struct {
			Level string `json:"level"`
			Data  string `json:"data"`
		}
		_ = json.Unmarshal(n.Params, &p)
		logs = append(logs, n.Method+" "+p.Level+" "+p.Data)
	}
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), logs...)
	}
	c := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy), snodo.WithNotificationHandler(notify)))
	say := func(level, data string) {
		t.Helper()
		_, err := c.Request(ctxFor(t, 30*time.Second), "test/notify", map[string]any{
			"method": "notifications/message", "params": map[string]any{"level": level, "data": data}})
		require.NoError(t, err)
	}
	say("warning", "before setLevel")
	assert.Empty(t, got(), "no logs before logging/setLevel")

	_, err := c.Request(ctxFor(t, 5*time.Second), "logging/setLevel", map[string]any{"level": "nope"})
	var se *snodo.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, snodo.CodeInvalidParams, se.Code)
	_, err = c.Request(ctxFor(t, 5*time.Second), "logging/setLevel", map[string]any{"level": "info"})
	require.NoError(t, err)
	say("debug", "too low")
	say("warning", "one")
	say("info", "two")
	assert.Equal(t, []string{"notifications/message warning one", "notifications/message info two"}, got(),
		"each call's logs at or above info, before its result")

	// Another legacy caller that set no level gets none of them.
	other := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy), snodo.WithNotificationHandler(func(context.Context, *snodo.Notification) {
		t.Error("a caller without a level got a log message")
	})))
	_, err = other.Request(ctxFor(t, 30*time.Second), "test/notify", map[string]any{
		"method": "notifications/message", "params": map[string]any{"level": "error", "data": "x"}})
	require.NoError(t, err)
}

// A legacy-era connection that cannot start fails the legacy calls and
// subscriptions with a -32000 that says so; modern calls go on.
func TestLegacyStartFailureIsAClearError(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	start := func(context.Context, ...snodo.Option) (*supervisor.Pool, error) {
		return nil, errors.New("no such server here")
	}
	h, err := NewHost(context.Background(), e.URL(), Serve("ts", p), ServeLegacy("ts", start))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	legacy := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy)))
	_, err = legacy.Request(ctxFor(t, 30*time.Second), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}})
	var se *snodo.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, snodo.CodeConnectionClosed, se.Code)
	assert.Contains(t, se.Message, "cannot start the legacy-era connection of ts")
	assert.Contains(t, se.Message, "no such server here")
	// Its subscriptions too: they go where its calls go.
	_, err = legacy.Listen(ctxFor(t, 30*time.Second), snodo.Filter{ToolsListChanged: true})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, snodo.CodeConnectionClosed, se.Code)
	assert.Contains(t, se.Message, "cannot start the legacy-era connection of ts")
	modern := client(t, e, "ts")
	res, err := modern.CallTool(ctxFor(t, 30*time.Second), "echo", map[string]any{"message": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Text())
}

// ServeLegacy needs the name served with Serve.
func TestServeLegacyNeedsServe(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	_, err = NewHost(context.Background(), e.URL(), Serve("ts", p),
		ServeLegacy("other", func(context.Context, ...snodo.Option) (*supervisor.Pool, error) { return nil, nil }))
	require.ErrorContains(t, err, `ServeLegacy("other") without Serve("other")`)
	<-p.Done()
}

// WithConnectOptions takes snodo.WithEra and snodo.WithNotificationHandler.
func TestWithConnectOptionsTakesEraAndNotificationHandler(t *testing.T) {
	c, err := clientConfig([]ClientOption{WithConnectOptions(snodo.WithEra(snodo.EraLegacy),
		snodo.WithNotificationHandler(func(context.Context, *snodo.Notification) {}))})
	require.NoError(t, err)
	assert.Equal(t, snodo.EraLegacy, c.era)
	assert.NotNil(t, c.notify)
}

// A legacy caller that gives up while its handler is answering a relayed
// request: the handler's ctx ends with the call, the host cancels the
// call on its server, and the next call is served.
func TestLegacyCallerGivesUpDuringARelayedRequest(t *testing.T) {
	e := natsServer(t)
	var starts atomic.Int32
	legacyHost(t, e, "ts", &starts)
	asked := make(chan struct{}, 1)
	ended := make(chan struct{}, 1)
	block := true
	var mu sync.Mutex
	handler := func(ctx context.Context, _ *snodo.ServerRequest) (any, error) {
		mu.Lock()
		b := block
		mu.Unlock()
		if b {
			asked <- struct{}{}
			<-ctx.Done()
			ended <- struct{}{}
			return nil, ctx.Err()
		}
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Bo"}}, nil
	}
	c := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(handler)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, "tools/call", map[string]any{"name": "ask"})
		done <- err
	}()
	testutil.Receive(t, asked, 30*time.Second, "the relayed elicitation")
	cancel()
	err := testutil.Receive(t, done, 10*time.Second, "the call's end")
	require.ErrorIs(t, err, context.Canceled)
	testutil.Receive(t, ended, 10*time.Second, "the handler's ctx ending with the call")
	mu.Lock()
	block = false
	mu.Unlock()
	raw, err := c.Request(ctxFor(t, 30*time.Second), "tools/call", map[string]any{"name": "ask"})
	require.NoError(t, err)
	assert.Contains(t, string(raw), "Hello, Bo!")
}

// A legacy-era caller of a host without ServeLegacy is served by the
// host's pool as any caller: its Era is that pool's (so a gateway in
// front translates for its legacy clients), and input_required rounds
// are answered by its handler as before.
func TestLegacyCallerOfAHostWithoutALegacySide(t *testing.T) {
	e := natsServer(t)
	host(t, e, "ts", 1)
	answer := func(context.Context, *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	c := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(answer)))
	assert.Equal(t, snodo.EraModern, c.Era())
	res, err := c.CallTool(ctxFor(t, 30*time.Second), "ask", nil)
	require.NoError(t, err)
	assert.Equal(t, "Hello, Ada!", res.Text())
}

// A legacy-era caller's subscription is served by the legacy-era pool
// its calls go to: the resource it subscribes to is subscribed on the
// server its calls reach, so an update that server sends during the
// caller's call arrives on the caller's subscription, as do its list
// changes. A modern caller's subscription stays on the name's pool.
func TestLegacyCallerListensWhereItsCallsGo(t *testing.T) {
	e := natsServer(t)
	var starts atomic.Int32
	legacyHost(t, e, "ts", &starts)
	c := client(t, e, "ts", WithConnectOptions(snodo.WithEra(snodo.EraLegacy)))
	ctx := ctxFor(t, 30*time.Second)
	f := snodo.Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://a"}}
	sub, err := c.Listen(ctx, f)
	require.NoError(t, err)
	defer sub.Close()
	assert.Equal(t, f, sub.Acknowledged())
	assert.Equal(t, int32(1), starts.Load(), "the subscription started the legacy-era connection")

	raw, err := c.Request(ctx, "test/touch", map[string]any{"uri": "test://a"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"notified":true}`, string(raw), "the call reached the server that holds the subscription")
	ev := testutil.Receive(t, sub.Events(), 10*time.Second, "the resource update")
	assert.Equal(t, "notifications/resources/updated", ev.Method)
	assert.JSONEq(t, `{"uri":"test://a"}`, string(ev.Params))

	_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	ev = testutil.Receive(t, sub.Events(), 10*time.Second, "the list change")
	assert.Equal(t, "notifications/tools/list_changed", ev.Method)

	// A modern caller's subscription is on the name's (modern) pool.
	modern := client(t, e, "ts")
	msub, err := modern.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer msub.Close()
	_, err = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	testutil.Receive(t, sub.Events(), 10*time.Second, "the legacy caller's list change")
	select {
	case ev := <-msub.Events():
		t.Fatalf("the modern subscription got the legacy-era server's %s", ev.Method)
	default:
	}
	assert.Equal(t, int32(1), starts.Load(), "the legacy-era connection started once")
}

// A legacy-era caller's tasks stay on the host and the legacy-era pool
// member that created them: two hosts serve the test server offering
// tasks, each with a legacy-era pool of 2, so a task's later calls
// (tasks/get, tasks/result, tasks/cancel) sent to any host or member
// would mostly miss it. Every task ends with its own result, and each is
// in its host's table of the legacy-era pool's tasks.
func TestLegacyCallerTasksStayOnTheirMember(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t, "-tasks")
	var hosts []*Host
	for range 2 {
		p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
		require.NoError(t, err)
		start := func(ctx context.Context, opts ...snodo.Option) (*supervisor.Pool, error) {
			return supervisor.NewPool(ctx, snodo.Command(cmd, args...), 2, supervisor.WithConnectOptions(opts...))
		}
		h, err := NewHost(context.Background(), e.URL(), Serve("tasks", p), ServeLegacy("tasks", start))
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		hosts = append(hosts, h)
	}
	c := client(t, e, "tasks", WithConnectOptions(snodo.WithEra(snodo.EraLegacy), snodo.WithServerRequestHandler(answerAda),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}})))
	require.Equal(t, snodo.EraLegacy, c.Era())

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			task, err := c.CallToolAsTask(ctxFor(t, 60*time.Second), "research", map[string]any{"topic": strconv.Itoa(i), "ms": 300, "pollMs": 20})
			if !assert.NoError(t, err) {
				return
			}
			res, err := task.Wait(ctxFor(t, 60*time.Second))
			if assert.NoError(t, err, "task %d", i) {
				assert.Equal(t, "Report on "+strconv.Itoa(i), res.Text())
			}
		})
	}
	wg.Wait()
	held := 0
	for _, h := range hosts {
		s := h.served[0]
		if s.leg == nil {
			continue
		}
		s.leg.tasks.mu.Lock()
		held += len(s.leg.tasks.byID)
		s.leg.tasks.mu.Unlock()
	}
	assert.Equal(t, 8, held, "each task is in its host's legacy-era table")

	task, err := c.CallToolAsTask(ctxFor(t, 60*time.Second), "research", map[string]any{"ms": 60000})
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() { _, err := task.Wait(ctxFor(t, 60*time.Second)); waited <- err }()
	require.NoError(t, task.Cancel(ctxFor(t, 20*time.Second)))
	err = testutil.Receive(t, waited, 20*time.Second, "Wait's end")
	require.ErrorIs(t, err, snodo.ErrTaskCancelled)
}
