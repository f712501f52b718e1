// Package interop_test runs one matrix of checks against real MCP servers
// nobody here wrote (or our own programs on other SDKs) over Streamable
// HTTP and over stdio, in each era a server speaks: list, a call with
// progress, a cancel, an input round, listen, a server request (legacy),
// and a restart of the server answered by a supervised client.
// test/peers/install.sh installs the servers; a missing one fails its row
// with the command that installs it.
package interop_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// call is a tool and its arguments.
type call struct {
	tool string
	args map[string]any
}

// row is one server in one era, and the tools that exercise each check.
type row struct {
	name string
	era  snodo.Era
	// server starts the server on HTTP; command is the server on stdio.
	server  func(t *testing.T) *server
	command func(t *testing.T) (string, []string)
	// tools is a subset of what tools/list must name.
	tools []string
	// progress reports updates progress notifications (0: at least one).
	progress call
	updates  int
	// cancel reports progress, then works long enough to be cancelled at
	// its first update; cancelled (optional) then answers "cancelled 1",
	// the server's count of calls it saw cancelled.
	cancel    call
	cancelled string
	// input needs one round of input (an elicitation answered by the
	// handler) and answers a text containing inputWant.
	input     call
	inputWant string
	// change makes the server's tool list change.
	change call
	// serverRequest (legacy only) makes the server send the request
	// serverMethod to the client, answered by the handler, while the call
	// runs; its text contains serverWant.
	serverRequest call
	serverMethod  string
	serverWant    string
	// quirk names the checks a server fails by a quirk of its own, with
	// the test that keeps the quirk (quirks_test.go).
	quirk map[string]string
}

// skipQuirk skips a check the row's server fails by a known quirk.
func (r row) skipQuirk(t *testing.T, check string) {
	t.Helper()
	if q := r.quirk[check]; q != "" {
		t.Skip("a quirk of the server: " + q)
	}
}

// rows are the matrix: every server in every era it serves, over HTTP
// and over stdio.
func rows() []row {
	goSDK := func(stateless bool) func(t *testing.T) *server {
		return func(t *testing.T) *server {
			return startServer(t, "", peerPath(t, "bin/everything-server"), "-http", "ADDR", fmt.Sprintf("-stateless=%v", stateless))
		}
	}
	goProgress := call{tool: "test_tool_with_progress"}
	goSDKRow := row{
		tools:    []string{"test_simple_text", "test_tool_with_progress"},
		progress: goProgress, updates: 3,
		cancel:    goProgress, // 3 updates 50 ms apart: cancelled at the first
		input:     call{tool: "test_input_required_result_elicitation"},
		inputWant: "Hello, Ada!",
		change:    call{tool: "test_trigger_tool_change"},
	}
	goModern, goLegacy := goSDKRow, goSDKRow
	goModern.name, goModern.era, goModern.server = "go-sdk/modern", snodo.EraModern, goSDK(true)
	goLegacy.name, goLegacy.era, goLegacy.server = "go-sdk/legacy", snodo.EraLegacy, goSDK(false)
	goLegacy.serverRequest = call{tool: "test_sampling", args: map[string]any{"prompt": "2+2?"}}
	goLegacy.serverMethod, goLegacy.serverWant = "sampling/createMessage", "LLM response: four"

	ours := row{
		tools:    []string{"greet", "count", "wait", "ask_name", "add_tool"},
		progress: call{tool: "count", args: map[string]any{"steps": 10}}, updates: 10,
		cancel: call{tool: "wait"}, cancelled: "cancelled",
		input: call{tool: "ask_name"}, inputWant: "Hello, Ada!",
		change: call{tool: "add_tool"},
	}
	ts := func(t *testing.T) *server {
		peerPath(t, "node_modules/@modelcontextprotocol/server/package.json")
		return startServer(t, "/mcp", nodePath(t), peerPath(t, "ts-modern/server.mjs"), "--http", "ADDR")
	}
	tsModern, tsLegacy := ours, ours
	tsModern.name, tsModern.era, tsModern.server = "ts-sdk-v2/modern", snodo.EraModern, ts
	tsLegacy.name, tsLegacy.era, tsLegacy.server = "ts-sdk-v2/legacy", snodo.EraLegacy, ts
	tsLegacy.serverRequest = call{tool: "ask_model"}
	tsLegacy.serverMethod, tsLegacy.serverWant = "sampling/createMessage", "model said: four"

	mcpgo := func(t *testing.T) *server {
		// -stateful: by default mcp-go checks only the form of a
		// session ID (TestMCPGoDefaultSessionsOutliveARestart).
		return startServer(t, "/mcp", peerPath(t, "bin/mcpgo-server"), "-http", "ADDR", "-stateful")
	}
	mcpgoModern, mcpgoLegacy := ours, ours
	mcpgoModern.name, mcpgoModern.era, mcpgoModern.server = "mcp-go/modern", snodo.EraModern, mcpgo
	mcpgoLegacy.name, mcpgoLegacy.era, mcpgoLegacy.server = "mcp-go/legacy", snodo.EraLegacy, mcpgo
	// mcp-go may lose a progress notification sent just before the
	// result, and now and then all of a call's (TestMCPGoProgressOnTheWire):
	// at least one arrives in three calls.
	mcpgoModern.updates, mcpgoLegacy.updates = 0, 0
	// mcp-go asks a legacy client with elicitation/create what a modern
	// one gets as input_required: the same tool is the server request.
	mcpgoLegacy.serverRequest = call{tool: "ask_name"}
	mcpgoLegacy.serverMethod, mcpgoLegacy.serverWant = "elicitation/create", "Hello, Ada!"

	httpRows := []row{goModern, goLegacy, tsModern, tsLegacy, mcpgoModern, mcpgoLegacy}
	var all []row
	for _, r := range httpRows {
		r.name = "http/" + r.name
		all = append(all, r)
	}
	// The same servers on stdio; the TypeScript one is modern-only there.
	stdio := map[string]func(t *testing.T) (string, []string){
		"go-sdk": func(t *testing.T) (string, []string) { return peerPath(t, "bin/everything-server"), nil },
		"ts-sdk-v2": func(t *testing.T) (string, []string) {
			peerPath(t, "node_modules/@modelcontextprotocol/server/package.json")
			return nodePath(t), []string{peerPath(t, "ts-modern/server.mjs")}
		},
		"mcp-go": func(t *testing.T) (string, []string) { return peerPath(t, "bin/mcpgo-server"), []string{"-stdio"} },
	}
	for _, r := range httpRows {
		if r.name == "ts-sdk-v2/legacy" {
			continue
		}
		r.command = stdio[r.name[:strings.IndexByte(r.name, '/')]]
		r.server = nil
		switch r.name {
		case "mcp-go/modern":
			r.quirk = map[string]string{
				"progress": "TestMCPGoStdioProgressAfterTheResult",
				"listen":   "TestMCPGoStdioListenEventsCarryNoSubscriptionID",
			}
		case "mcp-go/legacy":
			r.quirk = map[string]string{"progress": "TestMCPGoStdioProgressAfterTheResult"}
		}
		r.name = "stdio/" + r.name
		all = append(all, r)
	}
	return all
}

// TestMatrix runs every row: HTTP then stdio.
func TestMatrix(t *testing.T) {
	for _, r := range rows() {
		t.Run(r.name, func(t *testing.T) { r.run(t) })
	}
}

// connect connects to the row's server; over HTTP, srv is the server
// process.
func (r row) connect(t *testing.T, ctx context.Context, opts []snodo.Option) (c *snodo.Client, srv *server) {
	t.Helper()
	var err error
	if r.server != nil {
		srv = r.server(t)
		c, err = snodo.ConnectHTTP(ctx, srv.url, opts...)
	} else {
		command, args := r.command(t)
		c, err = snodo.Connect(ctx, command, args, append(opts, snodo.WithShutdownGrace(10*time.Second))...)
	}
	require.NoError(t, err)
	return c, srv
}

func (r row) run(t *testing.T) {
	a := newAnswers()
	opts := clientOptions(r.era, a)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, srv := r.connect(t, ctx, opts)
	closed := false
	defer func() {
		if !closed {
			closeAndWait(t, c)
		}
	}()
	require.Equal(t, r.era, c.Era())

	t.Run("list", func(t *testing.T) {
		tools, err := c.ListTools(ctx)
		require.NoError(t, err)
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
		}
		assert.Subset(t, names, r.tools)
	})

	t.Run("progress", func(t *testing.T) {
		r.skipQuirk(t, "progress")
		var updates atomic.Int32
		res, err := c.CallTool(ctx, r.progress.tool, r.progress.args, snodo.OnProgress(func(snodo.Progress) { updates.Add(1) }))
		require.NoError(t, err)
		assert.False(t, res.IsError, res.Text())
		if r.updates > 0 {
			assert.Equal(t, int32(r.updates), updates.Load())
			return
		}
		// A server that may lose its progress updates (mcp-go: about one
		// call in fifteen over HTTP loses them all) gets two more calls to
		// deliver at least one.
		for try := 0; try < 2 && updates.Load() == 0; try++ {
			res, err = c.CallTool(ctx, r.progress.tool, r.progress.args, snodo.OnProgress(func(snodo.Progress) { updates.Add(1) }))
			require.NoError(t, err)
			assert.False(t, res.IsError, res.Text())
		}
		assert.Positive(t, updates.Load())
	})

	t.Run("cancel", func(t *testing.T) {
		callCtx, cancelCall := context.WithCancel(ctx)
		defer cancelCall()
		_, err := c.CallTool(callCtx, r.cancel.tool, r.cancel.args, snodo.OnProgress(func(snodo.Progress) { cancelCall() }))
		require.ErrorIs(t, err, context.Canceled, "cancelled at its first progress update")
		if r.cancelled != "" {
			require.Eventually(t, func() bool {
				res, err := c.CallTool(ctx, r.cancelled, nil)
				return err == nil && res.Text() == "cancelled 1"
			}, 20*time.Second, 50*time.Millisecond, "the server saw the call cancelled")
		}
		_, err = c.ListTools(ctx)
		require.NoError(t, err, "the client lives on")
	})

	t.Run("input", func(t *testing.T) {
		if r.input.tool == "" {
			t.Skip("not in this era: see the row's quirk test")
		}
		res, err := c.CallTool(ctx, r.input.tool, r.input.args)
		require.NoError(t, err)
		assert.False(t, res.IsError, res.Text())
		assert.Contains(t, res.Text(), r.inputWant)
		assert.True(t, a.saw("elicitation/create"), "the handler answered the elicitation")
	})

	t.Run("listen", func(t *testing.T) {
		r.skipQuirk(t, "listen")
		if r.era == snodo.EraLegacy {
			// No subscriptions/listen: the server sends list changes
			// unasked (on the GET stream), to the notification handler.
			_, err := c.CallTool(ctx, r.change.tool, r.change.args)
			require.NoError(t, err)
			for {
				n := testutil.Receive(t, a.notes, 20*time.Second, "notifications/tools/list_changed")
				if n.Method == "notifications/tools/list_changed" {
					return
				}
			}
		}
		sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
		require.NoError(t, err)
		defer func() {
			sub.Close()
			select {
			case <-sub.Done():
			case <-time.After(20 * time.Second):
				t.Error("the subscription did not end within 20 s of Close")
			}
		}()
		if r.era == snodo.EraModern {
			assert.True(t, sub.Acknowledged().ToolsListChanged)
		}
		_, err = c.CallTool(ctx, r.change.tool, r.change.args)
		require.NoError(t, err)
		ev := testutil.Receive(t, sub.Events(), 20*time.Second, "notifications/tools/list_changed")
		assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	})

	t.Run("server request", func(t *testing.T) {
		if r.era != snodo.EraLegacy || r.serverRequest.tool == "" {
			t.Skip("a modern server asks within its result (input); a legacy one here has no such tool")
		}
		res, err := c.CallTool(ctx, r.serverRequest.tool, r.serverRequest.args)
		require.NoError(t, err)
		assert.Contains(t, res.Text(), r.serverWant)
		assert.True(t, a.saw(r.serverMethod), "the handler answered %s", r.serverMethod)
	})

	if srv != nil {
		t.Run("restart (plain)", func(t *testing.T) { r.restartPlain(t, ctx, c, srv) })
	}
	closed = true
	closeAndWait(t, c)
	t.Run("restart", func(t *testing.T) { r.restart(t, ctx, srv, opts) })
}

// restartPlain: the HTTP server killed and started again on the same
// address under a plain client. A legacy session is forgotten with the
// process, and the client starts a new one (once) for its next call; a
// modern client has no session to lose. Either way the client lives on.
func (r row) restartPlain(t *testing.T, ctx context.Context, c *snodo.Client, srv *server) {
	_, err := c.ListTools(ctx)
	require.NoError(t, err)
	srv.restart(t)
	_, err = c.ListTools(ctx)
	require.NoError(t, err, "the next call is served (a legacy client on a new session)")
	_, err = c.ListTools(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Err(), "the client lives on")
}

// restart: a supervised client, then the server restarted. Over HTTP, on
// the same address: a legacy session is gone with the process, and the
// connection starts a new one in place (or, when the server could not
// be reached at all for a moment, the supervisor answers with a new
// connection); a modern client has no session to lose and calls on as
// before. Over stdio: the server killed, and started again by the
// supervisor.
func (r row) restart(t *testing.T, ctx context.Context, srv *server, opts []snodo.Option) {
	var target snodo.Target
	if srv != nil {
		target = snodo.HTTP(srv.url)
	} else {
		command, args := r.command(t)
		target = snodo.Command(command, args...)
		opts = append(opts, snodo.WithShutdownGrace(10*time.Second))
	}
	sc, err := supervisor.Connect(ctx, target, supervisor.WithConnectOptions(opts...),
		supervisor.WithBackoff(supervisor.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2}))
	require.NoError(t, err)
	defer func() {
		_ = sc.Close()
		select {
		case <-sc.Done():
		case <-time.After(20 * time.Second):
			t.Error("the supervised client did not stop within 20 s of Close")
		}
	}()
	_, err = sc.ListTools(ctx)
	require.NoError(t, err)
	if srv == nil {
		proc, err := os.FindProcess(sc.Current().ServerPID())
		require.NoError(t, err)
		require.NoError(t, proc.Kill())
	} else {
		srv.restart(t)
	}
	if srv != nil && r.era == snodo.EraModern {
		_, err = sc.ListTools(ctx)
		require.NoError(t, err, "no session to lose: the next call works")
		assert.Zero(t, sc.Restarts())
		return
	}
	var failures []error
	require.Eventually(t, func() bool {
		_, err := sc.ListTools(ctx)
		if err != nil {
			failures = append(failures, err)
		}
		// Over stdio the supervisor starts the server again; over HTTP
		// the session may be renewed in place, without a restart.
		return err == nil && (srv != nil || sc.Restarts() >= 1)
	}, 30*time.Second, 50*time.Millisecond, "a new session answers (calls failed with: %v)", failures)
	for _, err := range failures {
		assert.True(t, errors.Is(err, snodo.ErrSessionExpired) || errors.Is(err, snodo.ErrServerUnreachable) ||
			errors.Is(err, snodo.ErrConnectionClosed) || errors.Is(err, supervisor.ErrRestarting) || errors.Is(err, snodo.ErrServerExited),
			"a call that met the restart says why: %v", err)
	}
	assert.Equal(t, r.era, sc.Era())
}

// clientOptions are the matrix client's: every capability, a handler
// that answers like a user, and the era (legacy is asked for; modern is
// what the probe finds).
func clientOptions(era snodo.Era, a *answers) []snodo.Option {
	opts := []snodo.Option{
		snodo.WithClientInfo("snodo-interop-test", "1.0.0"),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{
			Sampling:    &snodo.SamplingCapability{},
			Elicitation: &snodo.ElicitationCapability{Form: true},
			Roots:       &snodo.ListChangedCapability{ListChanged: true},
		}),
		snodo.WithServerRequestHandler(a.handler),
		snodo.WithNotificationHandler(a.notify),
		snodo.WithTimeout(30 * time.Second),
	}
	if era == snodo.EraLegacy {
		opts = append(opts, snodo.WithEra(snodo.EraLegacy))
	}
	return opts
}

// closeAndWait closes c and checks it ends, as closed by its user.
func closeAndWait(t *testing.T, c *snodo.Client) {
	t.Helper()
	_ = c.Close()
	select {
	case <-c.Done():
		assert.ErrorIs(t, c.Err(), snodo.ErrClosed)
	case <-time.After(20 * time.Second):
		t.Error("the client did not end within 20 s of Close")
	}
}

// answers records the server requests the handler answered, and passes
// on the notifications (dropping them when nobody reads).
type answers struct {
	mu      sync.Mutex
	methods []string
	notes   chan *snodo.Notification
}

func newAnswers() *answers { return &answers{notes: make(chan *snodo.Notification, 256)} }

func (a *answers) notify(_ context.Context, n *snodo.Notification) {
	select {
	case a.notes <- n:
	default:
	}
}

func (a *answers) saw(method string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.methods, method)
}

// handler answers sampling, elicitation (a name) and roots like a user.
func (a *answers) handler(_ context.Context, req *snodo.ServerRequest) (any, error) {
	a.mu.Lock()
	a.methods = append(a.methods, req.Method)
	a.mu.Unlock()
	switch req.Method {
	case "sampling/createMessage":
		return &handlers.CreateMessageResult{Role: "assistant", Model: "test-model", StopReason: "endTurn",
			Content: handlers.SamplingContents{{Type: "text", Text: "four"}}}, nil
	case "elicitation/create":
		return &handlers.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	case "roots/list":
		return &handlers.ListRootsResult{Roots: []handlers.Root{{URI: "file:///work", Name: "work"}}}, nil
	}
	return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: "not handled: " + req.Method}
}

// server is a real server process serving HTTP on a fixed local address,
// which a restart keeps.
type server struct {
	url     string
	command string
	args    []string
	env     []string // added to the environment; PORT is replaced by the port
	cmd     *exec.Cmd
}

// startServer runs command with args, ADDR replaced by a free local
// address, and waits until the endpoint (that address plus path)
// answers; the process is killed and reaped when the test ends.
func startServer(t *testing.T, path, command string, args ...string) *server {
	t.Helper()
	return startServerEnv(t, nil, path, command, args...)
}

// startServerEnv is startServer with env added to the server's
// environment, "PORT" (alone) replaced by PORT=the address's port.
func startServerEnv(t *testing.T, env []string, path, command string, args ...string) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	args = slices.Clone(args)
	for i, a := range args {
		if a == "ADDR" {
			args[i] = addr
		}
	}
	env = slices.Clone(env)
	for i, e := range env {
		if e == "PORT" {
			env[i] = "PORT=" + addr[strings.LastIndexByte(addr, ':')+1:]
		}
	}
	s := &server{url: "http://" + addr + path, command: command, args: args, env: env}
	s.start(t)
	t.Cleanup(s.stop)
	return s
}

func (s *server) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command(s.command, s.args...)
	s.cmd.Stderr = os.Stderr
	if s.env != nil {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	require.NoError(t, s.cmd.Start())
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(s.url)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer on %s within 30 s: %v", filepath.Base(s.command), s.url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// restart kills the process (its sessions die with it) and starts it
// again on the same address.
func (s *server) restart(t *testing.T) {
	t.Helper()
	s.stop()
	s.start(t)
}

// peerPath and nodePath are testutil's, named short for this file's many
// uses.
func peerPath(t *testing.T, rel string) string { t.Helper(); return testutil.PeerPath(t, rel) }

func nodePath(t *testing.T) string { t.Helper(); return testutil.NodePath(t) }
