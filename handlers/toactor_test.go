package handlers_test

import (
	"context"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// service is an actor that owns a connection and answers its server
// requests itself.
type service struct {
	asked   chan struct{} // signalled when a request it never answers arrives
	ctxDone chan struct{} // signalled when such a request's ctx is done
}

func (s *service) Receive(ctx protoactor.Context) {
	m, ok := ctx.Message().(*handlers.RequestMessage)
	if !ok {
		return
	}
	switch m.Request.Method {
	case "roots/list": // answered inside Receive
		m.Reply(map[string]any{"roots": []any{}, "answeredBy": ctx.Self().Id}, nil)
		m.Reply("a second reply is ignored", nil)
	case "elicitation/create": // answered later, from another goroutine
		go func() {
			time.Sleep(10 * time.Millisecond)
			m.Reply(nil, &jsonrpc.Error{Code: 4000, Message: "declined in the actor"})
		}()
	case "sampling/createMessage": // never answered; the actor watches Ctx
		s.asked <- struct{}{}
		go func() {
			<-m.Ctx.Done()
			s.ctxDone <- struct{}{}
		}()
	}
}

func TestActorOwnerAnswersServerRequests(t *testing.T) {
	sys := snodoactor.Shared()
	svc := &service{asked: make(chan struct{}, 1), ctxDone: make(chan struct{}, 1)}
	pid := sys.Root.SpawnPrefix(protoactor.PropsFromProducer(func() protoactor.Actor { return svc }), "service")
	cmd, args := testutil.Server(t, quickEOF)
	var lent connseam.Lent
	cfg := engine.Config{Command: cmd, Args: args, System: sys, Owner: pid, Handler: handlers.ToActor(sys, pid)}
	cfg.Lend = &lent
	c, err := engine.Start(context.Background(), cfg)
	require.NoError(t, err)
	serverPID := lent.ProcessID

	rs := ask(t, c, map[string]any{"method": "roots/list", "count": 3, "concurrent": true})
	for _, r := range rs {
		assert.JSONEq(t, `{"roots":[],"answeredBy":"`+pid.Id+`"}`, string(r.Result))
	}
	rs = ask(t, c, map[string]any{"method": "elicitation/create"})
	require.NotNil(t, rs[0].Error)
	assert.Equal(t, 4000, rs[0].Error.Code)
	assert.Equal(t, "declined in the actor", rs[0].Error.Message)

	rs = ask(t, c, map[string]any{"method": "sampling/createMessage", "cancelAfterMs": 50})
	assert.True(t, rs[0].Cancelled)
	assert.JSONEq(t, `null`, string(rs[0].Late))
	testutil.Receive(t, svc.asked, 10*time.Second, "the request to reach the actor")
	testutil.Receive(t, svc.ctxDone, 10*time.Second, "the actor to see the request's ctx done")

	// The owner's stop closes the connection; a request it left unanswered
	// is cancelled with it.
	waiting := askAsync(t, c, map[string]any{"method": "sampling/createMessage", "timeoutMs": 2000})
	testutil.Receive(t, svc.asked, 10*time.Second, "the request to reach the actor")
	sys.Root.Stop(pid)
	waitDone(t, c)
	assert.ErrorIs(t, c.Err(), sentinel.ErrOwnerExited)
	// Two watchers of the actor race: the connection stops (the waiting
	// request fails with it), or the handler sees its actor stop first
	// and answers -32603, as ToActor documents, before the connection
	// closes (seen under load in the full suite).
	if rs := testutil.Receive(t, waiting, 10*time.Second, "the waiting request to end"); rs != nil {
		require.Len(t, rs, 1)
		assert.Equal(t, jsonrpc.CodeInternalError, codeOf(rs[0]), "%+v", rs[0])
		assert.Contains(t, rs[0].Error.Message, "stopped without replying")
	}
	testutil.Receive(t, svc.ctxDone, 10*time.Second, "the unanswered request's ctx to be done")
	testutil.AssertReaped(t, serverPID, 10*time.Second)
}

func TestToActorWithAStoppedActor(t *testing.T) {
	sys := snodoactor.Shared()
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	sys.Root.Stop(pid)
	testutil.Eventually(t, func() bool { _, ok := sys.ProcessRegistry.Get(pid); return !ok }, 5*time.Second, "actor gone")
	c := start(t, engine.Config{Handler: handlers.ToActor(sys, pid)})
	rs := ask(t, c, map[string]any{"method": "roots/list"})
	assert.Equal(t, jsonrpc.CodeInternalError, codeOf(rs[0]))
	assert.Contains(t, rs[0].Error.Message, "not running")
}

// An actor that stops without replying (here: as it takes the request)
// does not leave the request waiting for the server's cancel or the
// connection's end: it is answered with -32603 as the actor stops.
func TestToActorActorStopsWithoutReplying(t *testing.T) {
	sys := snodoactor.Shared()
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(ctx protoactor.Context) {
		if _, ok := ctx.Message().(*handlers.RequestMessage); ok {
			ctx.Stop(ctx.Self())
		}
	}))
	c := start(t, engine.Config{Handler: handlers.ToActor(sys, pid)})
	rs := ask(t, c, map[string]any{"method": "roots/list", "timeoutMs": 5000})
	require.NotNil(t, rs[0].Error, "the request was never answered: %s", rs[0].Result)
	assert.Equal(t, jsonrpc.CodeInternalError, codeOf(rs[0]))
	assert.Contains(t, rs[0].Error.Message, "stopped without replying")
}

// ToActor with a nil system or PID makes a handler that answers every
// request with an error saying so, instead of panicking inside it (a
// -32603 "panicked: nil pointer dereference" the server would have seen).
func TestToActorWithNilArguments(t *testing.T) {
	sys := snodoactor.Shared()
	pid := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
	t.Cleanup(func() { sys.Root.Stop(pid) })
	for name, h := range map[string]handlers.Func{"nil system": handlers.ToActor(nil, pid), "nil pid": handlers.ToActor(sys, nil)} {
		t.Run(name, func(t *testing.T) {
			var res any
			var err error
			require.NotPanics(t, func() { res, err = h(t.Context(), &handlers.Request{Method: "roots/list"}) })
			assert.Nil(t, res)
			require.ErrorContains(t, err, "ToActor")
			assert.ErrorContains(t, err, name)
		})
	}
}
