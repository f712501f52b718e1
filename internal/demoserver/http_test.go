package demoserver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/demoserver"
)

// The demo server over Streamable HTTP: progress on the call's SSE
// stream, an input round, a subscription on a long-lived POST, and a
// cancel that closes the call's stream.
func TestHTTP(t *testing.T) {
	h := demoserver.NewHTTP(demoserver.Options{Tick: 10 * time.Millisecond, PluginDelay: 50 * time.Millisecond})
	hs := httptest.NewServer(h)
	defer hs.Close()
	defer h.Close()
	ctx, cancelAll := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelAll()
	c, err := snodo.ConnectHTTP(ctx, hs.URL+"/mcp", snodo.WithTimeout(10*time.Second),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}}),
		snodo.WithServerRequestHandler(func(context.Context, *snodo.ServerRequest) (any, error) {
			return map[string]any{"action": "accept", "content": map[string]string{"name": "Ada"}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.Close()
		<-c.Done()
	}()
	if c.Era() != snodo.EraModern || c.ServerInfo().Name != "snodo-demo" {
		t.Fatalf("era %v, server %+v", c.Era(), c.ServerInfo())
	}
	var steps []float64
	res, err := c.CallTool(ctx, "countdown", map[string]int{"from": 3},
		snodo.OnProgress(func(p snodo.Progress) { steps = append(steps, p.Progress) }))
	if err != nil || res.Text() != "Liftoff! (counted down from 3)" || !slices.Equal(steps, []float64{1, 2, 3}) {
		t.Fatalf("result %+v, progress %v, err %v", res, steps, err)
	}
	if res, err = c.CallTool(ctx, "greet", nil); err != nil || res.Text() != "Hello, Ada!" {
		t.Fatalf("greet: %+v, %v", res, err)
	}

	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if !sub.Acknowledged().ToolsListChanged {
		t.Fatalf("acknowledged %+v", sub.Acknowledged())
	}
	select {
	case ev := <-sub.Events():
		if ev.Method != "notifications/tools/list_changed" {
			t.Fatalf("event %s", ev.Method)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed within 10 s")
	}
	sub.Close()
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription did not end within 10 s of Close")
	}

	callCtx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	if _, err := c.CallTool(callCtx, "countdown", map[string]int{"from": 20}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != 3 {
		t.Fatalf("tools %+v, err %v", tools, err)
	}
}
