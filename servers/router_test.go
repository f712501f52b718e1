package servers_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/servers"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

func twoServers(t *testing.T) *servers.File {
	cmd, _ := testutil.Server(t)
	bin, _ := json.Marshal(cmd)
	f, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {
		"modern": {"command": `+string(bin)+`, "args": ["-era", "modern"], "snodo": {"pool": 2}},
		"legacy": {"command": `+string(bin)+`, "args": ["-era", "legacy"]}
	}}`))
	require.NoError(t, err)
	return f
}

// An actor owns a router; calls sent by server name are answered by that
// server's pool, before and after readiness; an unknown name is answered
// at once; the router closes with its owner.
func TestRouterRoutesCallsByName(t *testing.T) {
	f := twoServers(t)
	sys := snodoactor.Shared()
	got := make(chan any, 16)
	var router *servers.Router
	owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *protoactor.Started:
			var err error
			router, err = servers.StartRouter(context.Background(), ctx.ActorSystem(), ctx.Self(), f)
			if err != nil {
				got <- err
				return
			}
			// Sent before readiness: they wait for the pools.
			ctx.Request(router.PID(), &servers.To{Server: "modern", Call: &snodo.Call{Method: "test/echo", Params: map[string]int{"n": 1}, Tag: "early"}})
		case *servers.RouterReady:
			got <- msg
			ctx.Request(router.PID(), &servers.To{Server: "legacy", Call: &snodo.ToolCall{Name: "echo", Args: map[string]string{"message": "hi"}, Tag: "tool"}})
			ctx.Request(router.PID(), &servers.To{Server: "nope", Call: &snodo.Call{Method: "test/echo", Tag: "unknown"}})
		case *snodo.Reply, *snodo.ToolReply:
			got <- msg
		case *protoactor.Stopping:
			if router != nil {
				_ = router.Close()
			}
		}
	}))
	byTag := map[any]any{}
	var ready *servers.RouterReady
	for len(byTag) < 3 || ready == nil {
		select {
		case m := <-got:
			switch m := m.(type) {
			case error:
				t.Fatal(m)
			case *servers.RouterReady:
				ready = m
			case *snodo.Reply:
				byTag[m.Tag] = m
			case *snodo.ToolReply:
				byTag[m.Tag] = m
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("got %d replies, ready %v", len(byTag), ready != nil)
		}
	}
	require.NoError(t, ready.Err)
	early := byTag["early"].(*snodo.Reply)
	require.NoError(t, early.Err)
	tool := byTag["tool"].(*snodo.ToolReply)
	require.NoError(t, tool.Err)
	assert.Equal(t, "hi", tool.Result.Text())
	unknown := byTag["unknown"].(*snodo.Reply)
	assert.True(t, errors.Is(unknown.Err, servers.ErrUnknownServer), "%v", unknown.Err)
	assert.Contains(t, unknown.Err.Error(), `"nope"`)

	p, err := router.Pool("modern")
	require.NoError(t, err)
	assert.Equal(t, 2, len(p.Members()))
	assert.Equal(t, snodo.EraModern, p.Era())
	lp, err := router.Pool("legacy")
	require.NoError(t, err)
	assert.Equal(t, snodo.EraLegacy, lp.Era())

	testutil.StopActor(t, sys, owner, 10*time.Second)
	select {
	case <-router.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the router's servers were not reaped")
	}
	assert.ErrorIs(t, router.Err(), snodo.ErrClosed)
}

// NewRouter waits for every pool; a server that cannot start fails it.
func TestNewRouter(t *testing.T) {
	r, err := servers.NewRouter(t.Context(), twoServers(t))
	require.NoError(t, err)
	p, err := r.Pool("legacy")
	require.NoError(t, err)
	tools, err := p.ListTools(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, tools)
	require.NoError(t, r.Close())
	<-r.Done()

	f, err := servers.Parse("bad.json", []byte(`{"servers": {"gone": {"command": "/nonexistent/mcp"}}}`))
	require.NoError(t, err)
	_, err = servers.NewRouter(t.Context(), f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `server "gone"`)
}

// A call sent through a router that has stopped is still answered, and
// its reply names the server it was for.
func TestStoppedRouterStillAnswers(t *testing.T) {
	r, err := servers.NewRouter(t.Context(), twoServers(t))
	require.NoError(t, err)
	require.NoError(t, r.Close())
	<-r.Done()
	sys := snodoactor.Shared()
	got := make(chan *snodo.Reply, 1)
	asker := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case *servers.To:
			ctx.Request(r.PID(), msg)
		case *snodo.Reply:
			got <- msg
		}
	}))
	defer sys.Root.Stop(asker)
	sys.Root.Send(asker, &servers.To{Server: "modern", Call: &snodo.Call{Method: "test/echo", Tag: 1}})
	select {
	case rep := <-got:
		assert.ErrorIs(t, rep.Err, snodo.ErrConnectionClosed)
		assert.Equal(t, snodo.Origin{Server: "modern"}, rep.Origin)
	case <-time.After(5 * time.Second):
		t.Fatal("no reply from a stopped router")
	}
}

// NewRouter with snodo.WithActorSystem (in supervisor.WithConnectOptions)
// runs the router and its pools on that one system; StartRouter refuses
// an option naming a system other than its own, or an owner for the
// pools it owns, before anything starts.
func TestNewRouterOnTheCallersSystem(t *testing.T) {
	sys := snodoactor.NewQuietSystem(nil)
	t.Cleanup(sys.Shutdown)
	r, err := servers.NewRouter(t.Context(), twoServers(t), supervisor.WithConnectOptions(snodo.WithActorSystem(sys)))
	require.NoError(t, err)
	_, ok := sys.ProcessRegistry.Get(r.PID())
	assert.True(t, ok, "the router runs on the system WithActorSystem names")
	p, err := r.Pool("modern")
	require.NoError(t, err)
	_, ok = sys.ProcessRegistry.Get(p.PID())
	assert.True(t, ok, "its pools run there too")
	tools, err := p.ListTools(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, tools)
	require.NoError(t, r.Close())
	<-r.Done()

	before := testutil.ChildPIDs()
	_, err = servers.StartRouter(t.Context(), snodoactor.Shared(), nil, twoServers(t), supervisor.WithConnectOptions(snodo.WithActorSystem(sys)))
	require.ErrorContains(t, err, "one system")
	_, err = servers.StartRouter(t.Context(), nil, nil, twoServers(t), supervisor.WithConnectOptions(snodo.WithOwner(r.PID())))
	require.ErrorContains(t, err, "the router owns them")
	assert.Subset(t, before, testutil.ChildPIDs(), "nothing may be started")
}

// Nil messages — a nil *To, a To whose Call is a typed nil, to a name
// the router has or not — are answered or dropped, and the router and
// its pools keep serving: they used to panic the actor that got them.
func TestRouterSurvivesNilMessages(t *testing.T) {
	r, err := servers.NewRouter(t.Context(), twoServers(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	sys := snodoactor.Shared()
	got := make(chan *snodo.Reply, 8)
	asker := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		switch msg := ctx.Message().(type) {
		case string:
			ctx.Request(r.PID(), (*servers.To)(nil))
			ctx.Request(r.PID(), &servers.To{Server: "nope", Call: (*snodo.Call)(nil)})
			ctx.Request(r.PID(), &servers.To{Server: "nope", Call: (*snodo.ToolCall)(nil)})
			ctx.Request(r.PID(), &servers.To{Server: "modern", Call: (*snodo.Call)(nil)})
			ctx.Request(r.PID(), &servers.To{Server: "modern", Call: &snodo.Call{Method: "test/echo", Tag: "after"}})
		case *snodo.Reply:
			got <- msg
		}
	}))
	defer sys.Root.Stop(asker)
	sys.Root.Send(asker, "go")
	for {
		rep := testutil.Receive(t, got, 10*time.Second, "the replies")
		if rep.Tag == "after" {
			require.NoError(t, rep.Err)
			return
		}
		require.Error(t, rep.Err)
	}
}

// A router applies a server's options in one order: the file's, then
// those it gives every server, then those the program appended to that
// server's Options; each later one wins for what it sets.
func TestRouterOptionsPrecedence(t *testing.T) {
	cmd, args := testutil.Server(t)
	f, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"t": {"command": `+quote(cmd)+`, "args": `+quoteAll(args)+`,
		"env": {"FROM_FILE": "file", "FILE_AND_ALL": "file", "ALL_AND_OWN": "file"}}}}`))
	require.NoError(t, err)
	s := f.Servers[0]
	s.Options = append(s.Options, supervisor.WithConnectOptions(snodo.WithEnv("ALL_AND_OWN", "own")))
	r, err := servers.NewRouter(t.Context(), f,
		supervisor.WithConnectOptions(snodo.WithEnv("FILE_AND_ALL", "all"), snodo.WithEnv("ALL_AND_OWN", "all")))
	require.NoError(t, err)
	defer func() {
		require.NoError(t, r.Close())
		<-r.Done()
	}()
	p, err := r.Pool("t")
	require.NoError(t, err)
	for name, want := range map[string]string{"FROM_FILE": "file", "FILE_AND_ALL": "all", "ALL_AND_OWN": "own"} {
		raw, err := p.Request(t.Context(), "test/env", map[string]string{"name": name})
		require.NoError(t, err)
		assert.JSONEq(t, `{"value":`+quote(want)+`,"set":true}`, string(raw), name)
	}
}
