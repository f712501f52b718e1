package supervisor

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/test/testutil"
)

// askFor answers the test server's elicitation with a name.
func askFor(calls *atomic.Int32) snodo.ServerRequestHandler {
	return func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
		calls.Add(1)
		return map[string]any{"action": "accept", "content": map[string]string{"name": "Ada"}}, nil
	}
}

// A pool offers every typed call; input_required rounds are completed
// with the handler given in WithConnectOptions, while raw Request
// returns them as they are.
func TestPoolHasTheWholeClientSurface(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "modern")
	var asked atomic.Int32
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast, WithConnectOptions(
		snodo.WithServerRequestHandler(askFor(&asked)),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{}})))
	require.NoError(t, err)
	defer p.Close()
	assert.Equal(t, snodo.EraModern, p.Era())

	tools, err := p.ListTools(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, tools)
	require.NoError(t, p.Ping(t.Context()))

	res, err := p.CallTool(t.Context(), "ask", map[string]int{"rounds": 2})
	require.NoError(t, err)
	assert.Equal(t, "Hello, Ada!", res.Text())
	assert.Equal(t, int32(2), asked.Load())

	raw, err := p.Request(t.Context(), "tools/call", map[string]any{"name": "ask", "arguments": map[string]int{"rounds": 1}})
	require.NoError(t, err)
	var rt struct {
		ResultType string `json:"resultType"`
	}
	require.NoError(t, json.Unmarshal(raw, &rt))
	assert.Equal(t, "input_required", rt.ResultType, "raw Request is raw")

	m := p.Members()[0]
	res, err = m.CallTool(t.Context(), "ask", map[string]int{"rounds": 1})
	require.NoError(t, err)
	assert.Equal(t, "Hello, Ada!", res.Text())
}

// Pool.Close called from an actor's Stopping returns at once against
// servers that ignore EOF: stdin closed, callers answered; Done waits for
// the servers, which WithShutdownGrace ends.
func TestPoolCloseFromStoppingAgainstAServerIgnoringEOF(t *testing.T) {
	cmd, args := testutil.Server(t, "-ignore-eof")
	sys := snodoactor.Shared()
	ready := make(chan *Pool, 1)
	closed := make(chan time.Duration, 1)
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch ctx.Message().(type) {
		case *protoactor.Started:
			p, err := NewPool(context.Background(), snodo.Command(cmd, args...), 2, fast,
				WithConnectOptions(snodo.WithShutdownGrace(300*time.Millisecond)))
			if err != nil {
				t.Error(err)
				ctx.Stop(ctx.Self())
				return
			}
			ready <- p
		case *protoactor.Stopping:
			p := <-ready
			t0 := time.Now()
			_ = p.Close()
			closed <- time.Since(t0)
			ready <- p
		}
	}))
	var p *Pool
	select {
	case p = <-ready:
		ready <- p
	case <-time.After(10 * time.Second):
		t.Fatal("pool did not start")
	}
	var pids []int
	for _, m := range p.Members() {
		pids = append(pids, m.serverPID())
	}
	inflight := make(chan error, 1)
	go func() {
		_, err := p.Request(context.Background(), "test/sleep", map[string]int{"ms": 5000})
		inflight <- err
	}()
	testutil.Eventually(t, func() bool { return p.Members()[0].InFlight()+p.Members()[1].InFlight() > 0 }, 5*time.Second, "call in flight")

	sys.Root.Stop(pid)
	select {
	case d := <-closed:
		assert.Less(t, d, 250*time.Millisecond, "Close returned before the servers exited")
		t.Logf("Pool.Close from Stopping returned in %s", d)
	case <-time.After(5 * time.Second):
		t.Fatal("Pool.Close from Stopping hung")
	}
	select {
	case err := <-inflight:
		assert.ErrorIs(t, err, snodo.ErrConnectionClosed)
		assert.ErrorIs(t, err, snodo.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight was not answered")
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done never closed: the servers were not ended by the grace")
	}
	for _, pid := range pids {
		testutil.AssertReaped(t, pid, 5*time.Second)
	}
}

// A supervised client's Close returns at once too; Done follows.
func TestClientCloseDoesNotWaitForTheServer(t *testing.T) {
	cmd, args := testutil.Server(t, "-ignore-eof")
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, WithConnectOptions(snodo.WithShutdownGrace(300*time.Millisecond)))
	require.NoError(t, err)
	pid := c.serverPID()
	t0 := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(t0), 250*time.Millisecond)
	select {
	case <-c.Done():
		t.Fatal("Done closed before the server exited")
	default:
	}
	<-c.Done()
	testutil.AssertReaped(t, pid, 5*time.Second)
}

// Shrink waits for the calls of the members it takes out.
func TestShrinkWaitsForCalls(t *testing.T) {
	cmd, args := testutil.Server(t)
	p, err := NewPool(t.Context(), snodo.Command(cmd, args...), 2, fast)
	require.NoError(t, err)
	defer p.Close()
	for _, m := range p.Members() {
		go func() { _, _ = m.Request(t.Context(), "test/sleep", map[string]int{"ms": 300}) }()
	}
	testutil.Eventually(t, func() bool { return p.Members()[0].InFlight() > 0 && p.Members()[1].InFlight() > 0 }, 5*time.Second, "calls in flight")
	t0 := time.Now()
	require.NoError(t, p.Shrink(1))
	assert.GreaterOrEqual(t, time.Since(t0), 200*time.Millisecond, "Shrink returned before the call ended")
	assert.Equal(t, 1, len(p.Members()))
}

// The log level set on a supervised client reaches the server started
// after a restart; Await waits for that server.
func TestLoggingLevelSurvivesARestart(t *testing.T) {
	ev := newEvents()
	cmd, args := testutil.Server(t, "-era", "modern")
	c, err := Connect(t.Context(), snodo.Command(cmd, args...), fast, ev.option())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetLoggingLevel(t.Context(), "warning"))
	kill(t, c.serverPID())
	ev.waitFor(t, "exited", 5*time.Second)
	cur, err := c.Await(t.Context())
	require.NoError(t, err)
	raw, err := cur.Request(t.Context(), "test/echo", map[string]int{"n": 1})
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"io.modelcontextprotocol/logLevel":"warning"`)
}

// Calls made before a StartPool pool is ready follow the stated rule:
// with FailFast they fail at once (ErrStarting); otherwise they wait, for
// at most their timeout, and then succeed once a member is up.
func TestCallsBeforeAPoolIsReady(t *testing.T) {
	// A server silent on server/discover: each member takes the probe
	// timeout to start.
	cmd, args := testutil.Server(t, "-silent-discover")
	slow := WithConnectOptions(snodo.WithProbeTimeout(400 * time.Millisecond))
	sys := snodoactor.Shared()
	ready := make(chan *PoolReady, 2)
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if r, ok := ctx.Message().(*PoolReady); ok {
			ready <- r
		}
	}))
	defer sys.Root.Stop(owner)

	ff, err := StartPool(t.Context(), sys, owner, snodo.Command(cmd, args...), 1, fast, slow, FailFast())
	require.NoError(t, err)
	_, err = ff.Request(t.Context(), "test/echo", nil)
	require.ErrorIs(t, err, ErrStarting)
	require.ErrorIs(t, err, snodo.ErrConnectionClosed)

	p, err := StartPool(t.Context(), sys, owner, snodo.Command(cmd, args...), 1, fast, slow)
	require.NoError(t, err)
	_, err = p.Request(t.Context(), "test/echo", nil, snodo.Timeout(50*time.Millisecond))
	require.ErrorIs(t, err, ErrStarting)
	require.ErrorIs(t, err, snodo.ErrTimeout)
	_, err = p.Request(t.Context(), "test/echo", nil) // waits for the member
	require.NoError(t, err)
	for range 2 {
		require.NoError(t, (<-ready).Err)
	}
	require.NoError(t, ff.Close())
	require.NoError(t, p.Close())
	<-ff.Done()
	<-p.Done()
}
