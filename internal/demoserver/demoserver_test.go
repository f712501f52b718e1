package demoserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/demoserver"
	"github.com/snodo/snodo/test/testutil"
)

// serveEnv makes the test binary run the demo server instead of the tests,
// so the tests talk to it as a real child process.
const serveEnv = "SNODO_DEMOSERVER_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		opts := demoserver.Options{Tick: 10 * time.Millisecond, PluginDelay: 50 * time.Millisecond}
		if err := demoserver.Serve(os.Stdin, os.Stdout, opts); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	testutil.VerifyTestMain(m)
}

// connect starts the demo server and connects to it, answering
// elicitation/create with answer (nil: no handler, no capability).
func connect(t *testing.T, answer any) *snodo.Client {
	t.Helper()
	opts := []snodo.Option{snodo.WithEnv(serveEnv, "1"), snodo.WithTimeout(10 * time.Second)}
	if answer != nil {
		opts = append(opts,
			snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}}),
			snodo.WithServerRequestHandler(func(context.Context, *snodo.ServerRequest) (any, error) { return answer, nil }))
	}
	c, err := snodo.Connect(context.Background(), os.Args[0], nil, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Error("the demo server did not exit within 5 s of Close")
		}
	})
	return c
}

func TestDiscoverIsModern(t *testing.T) {
	c := connect(t, nil)
	if c.Era() != snodo.EraModern || c.ProtocolVersion() != demoserver.ProtocolVersion {
		t.Fatalf("era %v version %q, want modern %s", c.Era(), c.ProtocolVersion(), demoserver.ProtocolVersion)
	}
	if c.ServerInfo().Name != "snodo-demo" || c.Capabilities().Tools == nil {
		t.Fatalf("server info %+v, capabilities %+v", c.ServerInfo(), c.Capabilities())
	}
}

func TestCountdownReportsProgress(t *testing.T) {
	c := connect(t, nil)
	var steps []float64
	res, err := c.CallTool(context.Background(), "countdown", map[string]int{"from": 3},
		snodo.OnProgress(func(p snodo.Progress) { steps = append(steps, p.Progress) }))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "Liftoff! (counted down from 3)" || !slices.Equal(steps, []float64{1, 2, 3}) {
		t.Fatalf("result %q, progress %v", res.Text(), steps)
	}
}

func TestCountdownRejectsBadInput(t *testing.T) {
	c := connect(t, nil)
	_, err := c.CallTool(context.Background(), "countdown", map[string]int{"from": 99})
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != snodo.CodeInvalidParams {
		t.Fatalf("err = %v, want -32602", err)
	}
}

func TestGreetAsksForAName(t *testing.T) {
	c := connect(t, map[string]any{"action": "accept", "content": map[string]string{"name": "Ada"}})
	res, err := c.CallTool(context.Background(), "greet", nil)
	if err != nil || res.Text() != "Hello, Ada!" {
		t.Fatalf("result %+v, err %v", res, err)
	}
}

func TestGreetDeclined(t *testing.T) {
	c := connect(t, map[string]any{"action": "decline"})
	res, err := c.CallTool(context.Background(), "greet", nil)
	if err != nil || !res.IsError {
		t.Fatalf("result %+v, err %v; want an isError result", res, err)
	}
}

func TestGreetWithoutElicitationCapability(t *testing.T) {
	c := connect(t, nil)
	res, err := c.CallTool(context.Background(), "greet", nil)
	if err != nil || !res.IsError {
		t.Fatalf("result %+v, err %v; want an isError result", res, err)
	}
}

func TestPluginChangesToolList(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true, PromptsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if ack := sub.Acknowledged(); !ack.ToolsListChanged || ack.PromptsListChanged {
		t.Fatalf("acknowledged %+v, want tools only", ack)
	}
	select {
	case ev := <-sub.Events():
		if ev.Method != "notifications/tools/list_changed" {
			t.Fatalf("event %s", ev.Method)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed within 5 s")
	}
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != 3 || tools[2].Name != "time" {
		t.Fatalf("tools %+v, err %v", tools, err)
	}
	if _, err := c.CallTool(ctx, "time", nil); err != nil {
		t.Fatal(err)
	}
}

func TestCancelStopsCountdown(t *testing.T) {
	c := connect(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	_, err := c.CallTool(ctx, "countdown", map[string]int{"from": 20})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The server is still healthy and answers the next call.
	if _, err := c.ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRejectsWrongVersion(t *testing.T) {
	c := connect(t, nil)
	_, err := c.Request(context.Background(), "tools/list", json.RawMessage(
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}`))
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != -32022 {
		t.Fatalf("err = %v, want -32022", err)
	}
}
