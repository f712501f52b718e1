package substream

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// startConn starts the test server with flags on a connection configured
// by cfg, closed (and its server checked reaped) when the test ends.
func startConn(t testing.TB, cfg engine.Config, flags ...string) *engine.Conn {
	t.Helper()
	c, _ := testutil.StartLent(t, func(command string, args []string, lend *connseam.Lent) (*engine.Conn, error) {
		cfg.Command, cfg.Args, cfg.Lend = command, args, lend
		return engine.Start(context.Background(), cfg)
	}, flags...)
	return c
}

// listenParams is a modern subscriptions/listen params object: it carries
// the _meta the 2026-07-28 era requires, so these tests do not depend on
// the root package's era negotiation.
func listenParams(f Filter) json.RawMessage {
	b, err := json.Marshal(map[string]any{
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "subscription-test", "version": "0"},
		},
		"notifications": f,
	})
	if err != nil {
		panic(err)
	}
	return b
}

var toolsFilter = Filter{ToolsListChanged: true}

// open opens a subscription that the test's end closes.
func open(t testing.TB, c *engine.Conn, f Filter, opts Options) *Subscription {
	t.Helper()
	s, err := Open(context.Background(), c, listenParams(f), nil, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func call(t testing.TB, c *engine.Conn, method string, params any) json.RawMessage {
	t.Helper()
	res, err := c.Request(context.Background(), method, params, nil)
	require.NoError(t, err, method)
	return res
}

// emit asks the server to send count tools/list_changed notifications to
// subscription id, each with params {"k": k}.
func emit(t testing.TB, c *engine.Conn, id int64, k, count int) {
	t.Helper()
	call(t, c, "test/emit", map[string]any{
		"method": "notifications/tools/list_changed", "subscription": id,
		"params": map[string]any{"k": k}, "count": count,
	})
}

// cancelledOnServer waits until the server has received n
// notifications/cancelled and returns the request IDs they named.
func cancelledOnServer(t testing.TB, c *engine.Conn, n int) []int64 {
	t.Helper()
	return testutil.CancelledIDs(t, call(t, c, "test/waitNotification", map[string]any{"method": "notifications/cancelled", "count": n, "timeoutMs": 5000}))
}

// openOnServer lists the subscriptions the server holds open.
func openOnServer(t testing.TB, c *engine.Conn) []int64 {
	t.Helper()
	var out struct{ Open []int64 }
	require.NoError(t, json.Unmarshal(call(t, c, "test/subscriptions", nil), &out))
	return out.Open
}

// waitEnded waits for Done and returns Err.
func waitEnded(t testing.TB, s *Subscription) error {
	t.Helper()
	select {
	case <-s.Done():
		return s.Err()
	case <-time.After(10 * time.Second):
		t.Fatalf("subscription %d not done within 10 s", s.ID())
		return nil
	}
}

// drain reads Events until it closes (within 10 s).
func drain(t testing.TB, s *Subscription) []Event {
	t.Helper()
	var evs []Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("Events of subscription %d not closed within 10 s", s.ID())
		}
	}
}

// next reads one event (within 5 s).
func next(t testing.TB, s *Subscription) Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		require.True(t, ok, "Events closed early: %v", s.Err())
		return ev
	case <-time.After(5 * time.Second):
		t.Fatalf("no event on subscription %d within 5 s", s.ID())
		return Event{}
	}
}

// eventInfo decodes the k and the subscription ID an event carries.
func eventInfo(t testing.TB, ev Event) (k int, subID int64) {
	t.Helper()
	var p struct {
		K    int `json:"k"`
		Meta struct {
			ID int64 `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(ev.Params, &p), string(ev.Params))
	return p.K, p.Meta.ID
}
