package remote

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// A cancel is a reply subject; the host remembers those that come before
// their call. A hostile peer's oversized cancels must not be remembered:
// 4096 of them at the NATS server's max_payload would hold gigabytes.
func TestOversizedCancelsAreNotRemembered(t *testing.T) {
	e := natsServer(t)
	h := host(t, e, "x", 1)
	nc := conn(t, e)
	big := strings.Repeat("c", 1<<20)
	for range 8 {
		require.NoError(t, nc.Publish("snodo.x.cancel", []byte(big)))
	}
	small := "_INBOX.abc.1" // a real reply subject's size: remembered
	require.NoError(t, nc.Publish("snodo.x.cancel", []byte(small)))
	require.NoError(t, nc.Flush())
	remembered := func(key string) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, ok := h.cancelled[key]
		return ok
	}
	// One subscription delivers in order: once the small one is in, the
	// big ones have been handled.
	testutil.Eventually(t, func() bool { return remembered(small) }, 5*time.Second, "the small cancel is remembered")
	h.mu.Lock()
	held := 0
	for k := range h.cancelled {
		held += len(k)
	}
	h.mu.Unlock()
	assert.Equal(t, len(small), held, "bytes of cancels remembered")
}

// Every exported function refuses a nil argument with an error that says
// what to pass, and leaves nothing behind (a nil ctx on Listen used to
// leave a registration that made Close wait forever).
func TestNilArguments(t *testing.T) {
	e := natsServer(t)
	h := host(t, e, "x", 1)
	c := client(t, e, "x")
	var nilCtx context.Context
	_, err := NewClient(nil, "x")
	assert.ErrorContains(t, err, "nil *nats.Conn")
	_, err = Discover(context.Background(), nil, "")
	assert.ErrorContains(t, err, "nil *nats.Conn")
	_, err = Discover(nilCtx, conn(t, e), "")
	assert.ErrorContains(t, err, "nil context.Context")
	_, err = NewHost(nilCtx, e.URL())
	assert.ErrorContains(t, err, "nil context.Context")
	_, err = c.Request(nilCtx, "test/echo", nil)
	assert.ErrorContains(t, err, "nil context.Context")
	_, err = c.ListTools(nilCtx)
	assert.ErrorContains(t, err, "nil context.Context")
	_, err = c.Listen(nilCtx, snodo.Filter{ToolsListChanged: true})
	assert.ErrorContains(t, err, "nil context.Context")
	_, err = c.Info(nilCtx)
	assert.ErrorContains(t, err, "nil context.Context")
	assert.ErrorContains(t, h.Shutdown(nilCtx), "nil context.Context")

	// The client and the host still work, and close.
	raw, err := c.Request(ctxFor(t, 10*time.Second), "test/echo", map[string]int{"a": 1})
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"a":1`)
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	testutil.Receive(t, closed, 5*time.Second, "Client.Close")
	require.NoError(t, h.Close())
}

// The NATS server goes away under a client with a call in flight: the
// call fails within the heartbeat watch and Close returns at once, not
// after nats.go's 10 s flush timeout while it tries to reconnect.
func TestClientCloseWhileNATSIsDown(t *testing.T) {
	e := natsServer(t)
	c := client(t, e, "x")
	failed := make(chan error, 1)
	go func() {
		_, err := c.Request(ctxFor(t, 30*time.Second), "test/echo", nil)
		failed <- err
	}()
	e.Shutdown()
	assert.ErrorIs(t, testutil.Receive(t, failed, 10*time.Second, "the call's error"), snodo.ErrConnectionClosed)
	began := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(began), 2*time.Second, "Close took too long")
}

// Listen with a ctx already done sends nothing: a host would open a
// subscription on its MCP server for a caller that is not there.
func TestListenWithDoneCtxSendsNothing(t *testing.T) {
	e := natsServer(t)
	nc := conn(t, e)
	c, err := NewClient(nc, "x")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	spyConn := conn(t, e)
	spy, err := spyConn.SubscribeSync("snodo.x.listen")
	require.NoError(t, err)
	require.NoError(t, spyConn.Flush())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, nc.Publish("snodo.x.listen", []byte("marker"))) // no reply subject: hosts ignore it
	m, err := spy.NextMsg(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "marker", string(m.Data), "a listen request was sent")
}

// A ctx already done fails NewHost before it serves anything, and the
// pools it was given are closed, as on every NewHost error; Discover
// refuses a prefix no host can have.
func TestNewHostWithDoneCtx(t *testing.T) {
	e := natsServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = NewHost(ctx, e.URL(), Serve("x", p))
	require.ErrorIs(t, err, context.Canceled)
	testutil.Receive(t, p.Done(), 10*time.Second, "the pool's end")

	_, err = Discover(context.Background(), conn(t, e), "a.b")
	require.ErrorContains(t, err, `prefix "a.b"`)
}

// An event larger than the NATS server's max_payload cannot reach the
// caller: the subscription ends saying so, instead of the event being
// dropped without a word.
func TestOversizedEventEndsTheSubscription(t *testing.T) {
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoLog: true, NoSigs: true, MaxPayload: 64 << 10})
	require.NoError(t, err)
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	require.True(t, srv.ReadyForConnections(10*time.Second))
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := NewHost(context.Background(), srv.ClientURL(), Serve("x", p))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c, err := NewClient(nc, "x", WithHeartbeat(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	ctx := ctxFor(t, 20*time.Second)
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	big := map[string]any{"pad": strings.Repeat("x", 100<<10)}
	_, err = p.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "params": big})
	require.NoError(t, err)
	testutil.Receive(t, sub.Done(), 10*time.Second, "the subscription's end")
	require.ErrorIs(t, sub.Err(), ErrHostEnded)
	assert.ErrorContains(t, sub.Err(), "max_payload")
}

// A remote subscription's queue is bounded in bytes as well as in
// events, as a local one is: a host sending large events to a caller
// that does not read ends the subscription with snodo.ErrSubscriptionQueueFull once
// 16 MiB of params wait, long before 1024 events do (1024 events of up
// to max_payload each: 8 GiB with the embedded server's 8 MiB), and the
// host cancels it on its MCP server.
func TestRemoteQueueBytesBoundEndsTheSubscription(t *testing.T) {
	const size, count = 512 << 10, 48 // 24 MiB of events
	e := natsServer(t)
	host(t, e, "x", 1)
	// The default heartbeat: 24 MiB of events under -race on a loaded
	// machine held up 100 ms beats past their 350 ms watch.
	c := client(t, e, "x")
	ctx := ctxFor(t, 30*time.Second)
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed",
		"params": map[string]any{"pad": strings.Repeat("p", size)}, "count": count})
	require.NoError(t, err)
	testutil.Receive(t, sub.Done(), 20*time.Second, "the subscription's end (the byte bound)")
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionQueueFull)
	assert.Contains(t, sub.Err().Error(), "bytes")
	var n, queued int
	for ev := range sub.Events() {
		n++
		queued += len(ev.Params)
	}
	assert.LessOrEqual(t, queued, limits.MaxQueueBytes)
	assert.Greater(t, n, 16)
	t.Logf("%d events, %d bytes queued when the bound ended it", n, queued)
	require.Eventually(t, func() bool { // the host cancelled it on its MCP server
		raw, err := c.Request(ctx, "test/subscriptions", nil)
		var open struct{ Open []json.RawMessage }
		return err == nil && json.Unmarshal(raw, &open) == nil && len(open.Open) == 0
	}, 10*time.Second, 20*time.Millisecond)

	// snodo.MaxQueued sets the byte bound, as for a local one.
	const bound = 100 << 10
	sub, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true}, snodo.MaxQueued(0, bound))
	require.NoError(t, err)
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed",
		"params": map[string]any{"pad": strings.Repeat("p", 32<<10)}, "count": 8})
	require.NoError(t, err)
	testutil.Receive(t, sub.Done(), 10*time.Second, "the subscription's end (MaxQueued)")
	require.ErrorIs(t, sub.Err(), snodo.ErrSubscriptionQueueFull)
	assert.Contains(t, sub.Err().Error(), "bound 102400 bytes")
	_, err = c.Listen(ctx, snodo.Filter{}, snodo.MaxQueued(0, -1))
	assert.ErrorContains(t, err, "MaxQueued")
}

// A call sent with no timeout (none, and no ctx deadline) meets the
// host's own: its pool's per-request timeout ends it with a -32001
// raised by the host. (The test server's sleep bounds it if not.)
func TestNoCallerTimeoutMeetsTheHosts(t *testing.T) {
	e := natsServer(t)
	hostWith(t, e, "x", 1, []snodo.Option{snodo.WithTimeout(300 * time.Millisecond)})
	c := client(t, e, "x", WithConnectOptions(snodo.WithTimeout(-1)))
	_, err := c.Request(context.Background(), "test/sleep", map[string]any{"ms": 5000, "honorCancel": true})
	var re *snodo.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, snodo.CodeTimeout, re.Code)
	assert.True(t, re.Local(), "raised by the host")
	assert.Contains(t, err.Error(), "host ")
}

// A peer that answers Discover's info request over and over (the same
// host, again and again) neither keeps Discover waiting until its ctx
// ends nor fills its result: a host is listed once, and Discover returns
// after at most maxDiscoverAnswers answers.
func TestDiscoverAgainstAPeerThatKeepsAnswering(t *testing.T) {
	e := natsServer(t)
	host(t, e, "x", 1)
	peer := conn(t, e)
	info, err := json.Marshal(micro.Info{ServiceIdentity: micro.ServiceIdentity{Name: "fake", ID: "fake", Version: "1.0.0",
		Metadata: map[string]string{metaServer: "x", metaPrefix: defaultPrefix, metaHost: "fake", metaLabel: "fake:1"}}})
	require.NoError(t, err)
	stop := make(chan struct{})
	var spam sync.WaitGroup
	subject, _ := micro.ControlSubject(micro.InfoVerb, "", "")
	sub, err := peer.Subscribe(subject, func(m *nats.Msg) {
		spam.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if peer.Publish(m.Reply, info) != nil {
					return
				}
			}
		})
	})
	require.NoError(t, err)
	require.NoError(t, peer.Flush())
	t.Cleanup(func() { close(stop); _ = sub.Unsubscribe(); spam.Wait() })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	served, err := Discover(ctx, conn(t, e), "")
	took := time.Since(t0)
	require.NoError(t, err)
	require.NoError(t, ctx.Err(), "Discover returned before its ctx ended (after %s)", took)
	t.Logf("Discover against an endless answerer: %s", took)
	require.Len(t, served, 1)
	assert.Equal(t, "x", served[0].Name)
	labels := []string{}
	for _, h := range served[0].Hosts {
		labels = append(labels, h.Label)
	}
	// The flood may crowd out the real host's answer (NATS drops what a
	// slow subscriber cannot take), but no host is listed twice.
	assert.Contains(t, labels, "fake:1")
	assert.LessOrEqual(t, len(labels), 2, "the real host and the fake one, each once: %v", labels)
}

// Duration headers come from any NATS peer: nonsense reads as absent,
// and a value past what a time.Duration holds as the longest one (it
// wrapped around before, to a negative or a random timeout), as does the
// host's grace added to it.
func TestDurationHeadersSaturate(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"":                         0,
		"abc":                      0,
		"-5":                       0,
		"0":                        0,
		"1500":                     1500 * time.Millisecond,
		"9223372036854775":         math.MaxInt64, // × 1 ms does not fit
		"9223372036854775807":      math.MaxInt64,
		"999999999999999999999999": math.MaxInt64, // past int64
	} {
		h := nats.Header{}
		if v != "" {
			h.Set(hdrTimeout, v)
		}
		assert.Equal(t, want, headerMillis(h, hdrTimeout), "%q", v)
	}
	assert.Equal(t, time.Duration(math.MaxInt64), plusGrace(math.MaxInt64))
	assert.Equal(t, time.Duration(math.MaxInt64), plusGrace(math.MaxInt64-timeoutGrace+1))
	assert.Equal(t, time.Second+timeoutGrace, plusGrace(time.Second))
}

// TestCallOptsHeader: a call's Snodo-Opts reads back as it was written,
// its durations saturate as the one-header-per-setting form's do, unknown
// or malformed fields are ignored, and a call without it is read from the
// earlier form (and asks for the era).
func TestCallOptsHeader(t *testing.T) {
	o := callOpts{beat: 500 * time.Millisecond, timeout: time.Minute, total: 2 * time.Minute,
		alive: true, progress: true, reset: true, era: true}
	h := nats.Header{}
	h.Set(hdrOpts, string(appendOpts(nil, o)))
	assert.Equal(t, "beat=500 timeout=60000 total=120000 alive progress reset era", h.Get(hdrOpts))
	assert.Equal(t, o, callOptsOf(h))

	h.Set(hdrOpts, "alive")
	assert.Equal(t, callOpts{alive: true}, callOptsOf(h), "defaults: no beat, timeout or total")

	h.Set(hdrOpts, "timeout=999999999999999999999999 beat=-5 total=abc  bogus=1 =2 alive=no")
	assert.Equal(t, callOpts{timeout: math.MaxInt64, alive: true}, callOptsOf(h))

	old := nats.Header{}
	old.Set(hdrBeat, "250")
	old.Set(hdrAlive, "1")
	old.Set(hdrTimeout, "1500")
	old.Set(hdrProgress, "1")
	assert.Equal(t, callOpts{beat: 250 * time.Millisecond, timeout: 1500 * time.Millisecond, alive: true, progress: true, era: true},
		callOptsOf(old))
	assert.Equal(t, callOpts{era: true}, callOptsOf(nats.Header{}))
}
