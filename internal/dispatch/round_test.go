package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serveWith(h handlers.Func) func(context.Context, []*handlers.Request, time.Duration) ([]json.RawMessage, error) {
	return func(ctx context.Context, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error) {
		return Serve(ctx, h, nil, reqs, timeout)
	}
}

// Serve (the input handling of a client without a connection, a remote
// client's) is bounded by its timeout and ctx even
// when a handler ignores ctx, and a failure ends the round at once.
func TestServeIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	serve := serveWith(func(_ context.Context, req *handlers.Request) (any, error) {
		if req.Method == "fail" {
			return nil, errors.New("no")
		}
		<-release // ignores ctx
		return "late", nil
	})
	slow := []*handlers.Request{{Method: "roots/list"}}
	bounded := func(ctx context.Context, reqs []*handlers.Request, timeout time.Duration) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { _, err := serve(ctx, reqs, timeout); done <- err }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("Serve waits for a handler that ignores its ctx")
			return nil
		}
	}
	err := bounded(context.Background(), slow, 100*time.Millisecond)
	require.ErrorIs(t, err, jsonrpc.ErrTimeout)
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, jsonrpc.CodeTimeout, e.Code)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, bounded(ctx, slow, 0), context.DeadlineExceeded)

	err = bounded(context.Background(), []*handlers.Request{{Method: "roots/list"}, {Method: "fail"}}, 0)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 1, ie.Index)
}

// Serve checks an accepted elicitation form against its schema,
// as the connection's handler path does, before the answer goes anywhere.
func TestServeChecksElicitationAnswers(t *testing.T) {
	serve := serveWith(func(context.Context, *handlers.Request) (any, error) {
		return &handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": 42}}, nil
	})
	req := &handlers.Request{Method: "elicitation/create", Params: json.RawMessage(
		`{"message":"name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`)}
	_, err := serve(t.Context(), []*handlers.Request{req}, 0)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.ErrorContains(t, err, `does not match the requested schema: the field "name": want a string, got 42`)
}
