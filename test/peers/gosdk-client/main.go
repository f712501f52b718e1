// Command gosdk-client is an MCP client on the official Go SDK (v1.8.0),
// for snodo's interop tests of its gateway and bridge (test/interop,
// cmd/snodo). It is a module of its own so that the library never depends
// on the SDK; test/peers/install.sh builds it into
// test/peers/bin/gosdk-client.
//
//	gosdk-client -url http://HOST:PORT/mcp    # over Streamable HTTP
//	gosdk-client -- CMD ARGS...               # over stdio (a bridge)
//
// In front of server-everything it lists the tools, runs
// trigger-long-running-operation with progress, answers the server's
// sampling and elicitation requests with its own handlers, sets the log
// level and turns the simulated logs on, subscribes to a resource and
// turns its updates on. It prints one JSON line of what it saw and exits
// 0, or prints the error on stderr and exits 1.
//
// With -restart it then starts a long call, prints {"phase":"inflight"}
// once the call's first progress came, and waits: the test kills the
// backend. It records the long call's error, calls echo every 100 ms
// (connecting again when the session is gone, as a host would) until one
// succeeds, and waits for a tools/list_changed notification.
//
// GATEWAY_CLIENT_SKIP (comma-separated: "sampling", "logs") leaves steps
// out, as for the TypeScript client's script.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type seen struct {
	mu          sync.Mutex
	Tools       []string `json:"tools"`
	Progress    int      `json:"progress"`
	Sampled     int      `json:"sampled"`
	Elicited    int      `json:"elicited"`
	Sampling    string   `json:"sampling"`
	Logs        int      `json:"logs"`
	Updates     int      `json:"updates"`
	ListChanged int      `json:"list_changed"`
	Late        int      `json:"late_progress"` // progress for a call that had returned
	Doomed      int      `json:"doomed_progress,omitempty"`

	InflightError           string  `json:"inflight_error,omitempty"`
	RecoverySecs            float64 `json:"recovery_seconds,omitempty"`
	Reconnects              int     `json:"reconnects,omitempty"`
	ListChangedAfterRestart bool    `json:"list_changed_after_restart,omitempty"`
}

func main() {
	url := flag.String("url", "", "the Streamable HTTP endpoint (else: the command after --, over stdio)")
	restart := flag.Bool("restart", false, "then test a backend restart (see the package doc)")
	flag.Parse()
	if *url == "" && flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gosdk-client -url URL | gosdk-client -- CMD ARGS...")
		os.Exit(2)
	}
	s := &seen{}
	err := run(s, *url, flag.Args(), *restart)
	s.mu.Lock()
	out, _ := json.Marshal(s)
	s.mu.Unlock()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gosdk-client: %v %s\n", err, out)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

func (s *seen) add(f func()) { s.mu.Lock(); f(); s.mu.Unlock() }

func (s *seen) count(f func() int) int { s.mu.Lock(); defer s.mu.Unlock(); return f() }

// until waits for cond, at most 15 s.
func until(what string, cond func() bool) error {
	for t0 := time.Now(); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Since(t0) > 15*time.Second {
			return fmt.Errorf("no %s within 15 s", what)
		}
	}
	return nil
}

func run(s *seen, url string, argv []string, restart bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var calling sync.Map // progress tokens of the calls that have not returned
	client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-interop", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			s.add(func() { s.Sampled++ })
			return &mcp.CreateMessageResult{Model: "go-handler", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by the go-sdk client"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			s.add(func() { s.Elicited++ })
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		LoggingMessageHandler:  func(context.Context, *mcp.LoggingMessageRequest) { s.add(func() { s.Logs++ }) },
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { s.add(func() { s.Updates++ }) },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.add(func() { s.ListChanged++ }) },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if _, ok := calling.Load(fmt.Sprint(r.Params.ProgressToken)); !ok {
				s.add(func() { s.Late++ })
				return
			}
			if r.Params.ProgressToken == "doomed" {
				s.add(func() { s.Doomed++ })
				return
			}
			s.add(func() { s.Progress++ })
		},
	})
	connect := func() (*mcp.ClientSession, error) {
		var t mcp.Transport
		if url != "" {
			t = &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
		} else {
			t = &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}
		}
		return client.Connect(ctx, t, nil)
	}
	cs, err := connect()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { cs.Close() }()
	call := func(cs *mcp.ClientSession, token, name string, args map[string]any) (*mcp.CallToolResult, error) {
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if token != "" {
			p.SetProgressToken(token)
			calling.Store(token, true)
			defer calling.Delete(token)
		}
		return cs.CallTool(ctx, p)
	}

	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		s.Tools = append(s.Tools, t.Name)
	}
	if _, err := call(cs, "long", "trigger-long-running-operation", map[string]any{"duration": 0.5, "steps": 5}); err != nil {
		return fmt.Errorf("long-running call: %w", err)
	}
	skip := strings.Split(os.Getenv("GATEWAY_CLIENT_SKIP"), ",")
	if !slices.Contains(skip, "sampling") {
		res, err := call(cs, "", "trigger-sampling-request", map[string]any{"prompt": "hello"})
		if err != nil {
			return fmt.Errorf("sampling call: %w", err)
		}
		b, _ := json.Marshal(res.Content)
		s.add(func() { s.Sampling = string(b) })
		if _, err := call(cs, "", "trigger-elicitation-request", map[string]any{}); err != nil {
			return fmt.Errorf("elicitation call: %w", err)
		}
	}
	if !slices.Contains(skip, "logs") {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			return fmt.Errorf("logging/setLevel: %w", err)
		}
		if _, err := call(cs, "", "toggle-simulated-logging", map[string]any{}); err != nil {
			return fmt.Errorf("toggle-simulated-logging: %w", err)
		}
		if err := until("log message", func() bool { return s.count(func() int { return s.Logs }) > 0 }); err != nil {
			return err
		}
	}
	rs, err := cs.ListResources(ctx, nil)
	if err != nil {
		return fmt.Errorf("resources/list: %w", err)
	}
	if len(rs.Resources) == 0 {
		return errors.New("resources/list: no resources")
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: rs.Resources[0].URI}); err != nil {
		return fmt.Errorf("resources/subscribe: %w", err)
	}
	if _, err := call(cs, "", "toggle-subscriber-updates", map[string]any{}); err != nil {
		return fmt.Errorf("toggle-subscriber-updates: %w", err)
	}
	if err := until("resource update", func() bool { return s.count(func() int { return s.Updates }) > 0 }); err != nil {
		return err
	}
	if !restart {
		time.Sleep(200 * time.Millisecond) // a late progress notification would show in late_progress
		return nil
	}

	// The backend restart: a long call in flight when the test kills it.
	changedBefore := s.count(func() int { return s.ListChanged })
	inflight := make(chan error, 1)
	go func() {
		_, err := call(cs, "doomed", "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 30})
		inflight <- err
	}()
	if err := until("progress of the doomed call", func() bool { return s.count(func() int { return s.Doomed }) > 0 }); err != nil {
		return err
	}
	fmt.Println(`{"phase":"inflight"}`)
	select {
	case err = <-inflight:
	case <-time.After(20 * time.Second):
		return errors.New("the call in flight when the backend was killed got no answer within 20 s")
	}
	if err == nil {
		return errors.New("the call in flight when the backend was killed succeeded")
	}
	s.add(func() { s.InflightError = err.Error() })
	t0 := time.Now()
	for {
		if _, err = call(cs, "", "echo", map[string]any{"message": "again"}); err == nil {
			break
		}
		if time.Since(t0) > 20*time.Second {
			return fmt.Errorf("no call succeeded within 20 s of the restart: %w", err)
		}
		if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) {
			cs.Close()
			if cs, err = connect(); err != nil {
				return fmt.Errorf("connecting again: %w", err)
			}
			s.add(func() { s.Reconnects++ })
			continue
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.add(func() { s.RecoverySecs = time.Since(t0).Seconds() })
	if s.count(func() int { return s.Reconnects }) > 0 {
		return nil // a session of after the restart: the client lists anew
	}
	err = until("tools/list_changed after the restart", func() bool { return s.count(func() int { return s.ListChanged }) > changedBefore })
	s.add(func() { s.ListChangedAfterRestart = err == nil })
	return nil
}
