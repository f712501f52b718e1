package remote

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/snodo/snodo"
)

func TestTraceContextCrossesTheHop(t *testing.T) {
	e := natsServer(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	hostWith(t, e, "traced", 1, []snodo.Option{snodo.WithTracerProvider(tp)})
	c := client(t, e, "traced")

	caller := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = caller.Shutdown(context.Background()) })
	ctx, span := caller.Tracer("test").Start(ctxFor(t, 20*time.Second), "agent step")
	_, err := c.Request(ctx, "test/echo", nil)
	span.End()
	require.NoError(t, err)
	var found bool
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == span.SpanContext().SpanID() {
			found = true
			assert.Equal(t, span.SpanContext().TraceID(), s.SpanContext().TraceID())
		}
	}
	assert.True(t, found, "the host's span is a child of the caller's")
}

func TestLegacyServerRequestsAnsweredByHost(t *testing.T) {
	e := natsServer(t)
	answer := func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "the host"}}, nil
	}
	hostWith(t, e, "legacy", 1, []snodo.Option{snodo.WithServerRequestHandler(answer), snodo.WithEra(snodo.EraLegacy)}, "-era", "legacy")
	called := false
	c := client(t, e, "legacy", WithServerRequestHandler(func(context.Context, *snodo.ServerRequest) (any, error) {
		called = true
		return nil, nil
	}))
	res, err := c.CallTool(ctxFor(t, 20*time.Second), "ask", map[string]any{"rounds": 1})
	require.NoError(t, err)
	assert.Equal(t, "Hello, the host!", res.Text())
	assert.False(t, called, "a legacy server's requests never reach the caller")
	assert.Equal(t, snodo.EraLegacy, c.Era())
}

func TestHostSideEndsTellWhy(t *testing.T) {
	e := natsServer(t)
	h := host(t, e, "subs", 1)
	c := client(t, e, "subs", WithHeartbeat(100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)

	// The MCP server ends it.
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	raw, err := c.Request(ctx, "test/subscriptions", nil)
	require.NoError(t, err)
	var open struct{ Open []json.RawMessage }
	require.NoError(t, json.Unmarshal(raw, &open))
	require.Len(t, open.Open, 1)
	_, err = c.Request(ctx, "test/endSubscription", map[string]any{"subscription": open.Open[0], "mode": "teardown"})
	require.NoError(t, err)
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), ErrHostEnded)
	assert.Contains(t, sub.Err().Error(), "tore the subscription down")

	// The host drains.
	sub, err = c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(ctx))
	<-sub.Done()
	require.ErrorIs(t, sub.Err(), ErrHostEnded)
	assert.Contains(t, sub.Err().Error(), "draining")
	require.ErrorIs(t, sub.Err(), snodo.ErrConnectionClosed)
}
