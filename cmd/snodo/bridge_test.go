package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcp "github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// bridgedNATS starts an embedded NATS server for one test and returns its
// URL.
func bridgedNATS(t *testing.T) string {
	t.Helper()
	e, err := natsembed.Start(natsembed.Options{})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	return e.URL()
}

// bridgedHost serves a pool of one test server (with flags) as name on
// the NATS server at url, in this process.
func bridgedHost(t *testing.T, url, name string, flags ...string) {
	t.Helper()
	cmd, args := testutil.Server(t, flags...)
	p, err := supervisor.NewPool(context.Background(), mcp.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := remote.NewHost(context.Background(), url, remote.Serve(name, p))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = h.Close()
		testutil.Receive(t, h.Done(), 10*time.Second, "the host's servers reaped")
	})
}

// connectBridge connects snodo, as any MCP host would, to `snodo bridge`
// forwarding to name.
func connectBridge(t *testing.T, url, name string, opts ...mcp.Option) *mcp.Client {
	t.Helper()
	c, err := mcp.Connect(t.Context(), snodoBin, []string{"bridge", "--nats", url, "--server", name}, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		testutil.Receive(t, c.Done(), 10*time.Second, "the bridge process reaped")
	})
	return c
}

// A client of the bridge lists, calls and sees progress as it would on
// the served server itself, in the legacy era, with the served server's
// own info.
func TestBridgeForwardsCallsAndProgress(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged")
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy))
	assert.Equal(t, mcp.EraLegacy, c.Era())
	assert.Equal(t, "snodo-testserver", c.ServerInfo().Name)
	require.NotNil(t, c.Capabilities().Tools)

	ctx := t.Context()
	tools, err := c.ListTools(ctx) // pages of 2: the cursor goes through
	require.NoError(t, err)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	assert.Subset(t, names, []string{"echo", "add", "slow"})

	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "through the bridge"})
	require.NoError(t, err)
	assert.Equal(t, "through the bridge", res.Text())

	var updates atomic.Int32
	_, err = c.CallTool(ctx, "slow", map[string]any{"ms": 300}, mcp.OnProgress(func(mcp.Progress) { updates.Add(1) }))
	require.NoError(t, err)
	assert.Positive(t, updates.Load(), "progress reached the bridge's client")

	_, err = c.Request(ctx, "no/such/method", nil)
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, mcp.CodeMethodNotFound, e.Code, "the served server's own error: %v", err)
	assert.False(t, e.Local())
}

// A legacy served server's tasks work through the bridge: its tasks
// capability reaches the client, and each task's later calls reach the
// host, and the member, that holds it (two hosts here). Before, the
// capability was left out, so a client could not run the task-required
// tool at all.
func TestBridgeRunsTasks(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged", "-tasks", "-era", "legacy")
	bridgedHost(t, url, "bridged", "-tasks", "-era", "legacy")
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy))
	require.NotNil(t, c.Capabilities().Tasks, "the tasks capability reached the bridge's client")
	for i := range 4 {
		task, err := c.CallToolAsTask(t.Context(), "research", map[string]any{"topic": fmt.Sprint(i), "ms": 100, "pollMs": 20})
		require.NoError(t, err)
		res, err := task.Wait(t.Context())
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("Report on %d", i), res.Text())
	}
	res, err := c.CallTool(t.Context(), "research", map[string]any{"topic": "plain", "pollMs": 20})
	require.NoError(t, err)
	assert.Equal(t, "Report on plain", res.Text())
}

// A modern served server that needs input (input_required) gets it from
// the bridge's legacy client: each input request reaches the client as
// a request of its own era (elicitation/create), and the client sees
// only the final result.
func TestBridgeInputRoundsReachTheClient(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged")
	var asked atomic.Int32
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy),
		mcp.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}), mcp.WithServerRequestHandler(func(_ context.Context, req *mcp.ServerRequest) (any, error) {
			if req.Method != "elicitation/create" {
				return nil, &mcp.Error{Code: mcp.CodeMethodNotFound, Message: req.Method}
			}
			n := asked.Add(1)
			return map[string]any{"action": "accept", "content": map[string]any{"name": fmt.Sprint("name", n)}}, nil
		}))
	res, err := c.CallTool(t.Context(), "ask", map[string]any{"rounds": 2})
	require.NoError(t, err)
	assert.False(t, res.IsError, res.Text())
	assert.Equal(t, "Hello, name2!", res.Text())
	assert.EqualValues(t, 2, asked.Load(), "one elicitation/create per round")

	// A client without a handler answers the request itself, with its
	// own error (the gateway never answers for it): the call fails,
	// saying why.
	plain := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy))
	_, err = plain.CallTool(t.Context(), "ask", map[string]any{"rounds": 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "elicitation/create")
}

// The TypeScript SDK's client uses the bridge as it would any stdio
// server: it lists, calls with progress, and answers the input rounds of
// a modern served server as elicitation/create requests.
func TestBridgeFromTheTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: install Node.js >= 20, then run bash test/peers/install.sh")
	}
	if _, err := os.Stat("../../test/peers/node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (%v): run bash test/peers/install.sh", err)
	}
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "../../test/peers/ts-client/bridge-client.mjs", snodoBin, url, "bridged")
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	var seen struct {
		Server   string   `json:"server"`
		Tools    []string `json:"tools"`
		Echo     string   `json:"echo"`
		Progress int      `json:"progress"`
		Ask      string   `json:"ask"`
		Elicited int      `json:"elicited"`
	}
	require.NoError(t, json.Unmarshal(out, &seen), "stdout: %s", out)
	assert.Equal(t, "snodo-testserver", seen.Server)
	assert.Subset(t, seen.Tools, []string{"echo", "add", "slow", "ask"})
	assert.Equal(t, "from TypeScript", seen.Echo)
	assert.Positive(t, seen.Progress, "progress reached the TypeScript client")
	assert.Equal(t, "Hello, ts2!", seen.Ask)
	assert.Equal(t, 2, seen.Elicited)
}

// A modern client's requests go through with their _meta: server/discover
// settles the era with the served server itself, and the client
// completes input rounds on its own.
func TestBridgeModernClient(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged")
	var asked atomic.Int32
	c := connectBridge(t, url, "bridged", mcp.WithServerRequestHandler(func(_ context.Context, req *mcp.ServerRequest) (any, error) {
		n := asked.Add(1)
		return map[string]any{"action": "accept", "content": map[string]any{"name": fmt.Sprint("modern", n)}}, nil
	}))
	assert.Equal(t, mcp.EraModern, c.Era())
	assert.Equal(t, "snodo-testserver", c.ServerInfo().Name)
	ctx := t.Context()
	tools, err := c.ListTools(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, tools)
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "modern"})
	require.NoError(t, err)
	assert.Equal(t, "modern", res.Text())
	var updates atomic.Int32
	_, err = c.CallTool(ctx, "slow", map[string]any{"ms": 300}, mcp.OnProgress(func(mcp.Progress) { updates.Add(1) }))
	require.NoError(t, err)
	assert.Positive(t, updates.Load())
	res, err = c.CallTool(ctx, "ask", map[string]any{"rounds": 2})
	require.NoError(t, err)
	assert.Equal(t, "Hello, modern2!", res.Text())
}

// A modern client's subscriptions/listen is served by a host of the
// name: the acknowledgement and the events reach the client, marked with
// its own subscription.
func TestBridgeListen(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged")
	c := connectBridge(t, url, "bridged")
	require.Equal(t, mcp.EraModern, c.Era())
	ctx := t.Context()
	sub, err := c.Listen(ctx, mcp.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	assert.True(t, sub.Acknowledged().ToolsListChanged)
	_, err = c.Request(ctx, "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	ev := testutil.Receive(t, sub.Events(), 10*time.Second, "the list_changed event through the bridge")
	assert.Equal(t, "notifications/tools/list_changed", ev.Method)
}

// A client that cancels a call (its ctx ends) has it cancelled on the
// served server: notifications/cancelled reaches the MCP server behind
// the host.
func TestBridgeCancelReachesTheServer(t *testing.T) {
	url := bridgedNATS(t)
	journal := filepath.Join(t.TempDir(), "journal")
	bridgedHost(t, url, "bridged", "-journal", journal)
	c := connectBridge(t, url, "bridged")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", map[string]any{"ms": 60000}, mcp.OnProgress(func(mcp.Progress) {
			select {
			case started <- struct{}{}:
			default:
			}
		}))
		errc <- err
	}()
	testutil.Receive(t, started, 20*time.Second, "the first progress update of the slow call")
	cancel()
	err := testutil.Receive(t, errc, 10*time.Second, "the cancelled call's return")
	require.ErrorIs(t, err, context.Canceled)
	testutil.Eventually(t, func() bool {
		b, _ := os.ReadFile(journal)
		return strings.Contains(string(b), `"method":"notifications/cancelled"`)
	}, 10*time.Second, "notifications/cancelled at the MCP server")
}

// A name no host serves: each request gets a JSON-RPC error saying so,
// and the bridge lives on (the client may try again once a host is up);
// every line it writes is one JSON value.
func TestBridgeWithoutAHost(t *testing.T) {
	url := bridgedNATS(t)
	b := startBridge(t, url, "nobody", 10*time.Second)
	answer := b.answer
	// initialize needs the served server's description: the error says
	// no host serves the name, and the client may initialize again later.
	for _, id := range []int{1, 2} {
		m := answer(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, id))
		assert.EqualValues(t, id, m["id"])
		e, _ := m["error"].(map[string]any)
		require.NotNil(t, e, "an error answer: %v", m)
		assert.EqualValues(t, -32000, e["code"])
		assert.Contains(t, e["message"], `no host serves "nobody"`)
	}
	// A modern request goes to the name as it is, and fails the same way.
	m := answer(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	e, _ := m["error"].(map[string]any)
	require.NotNil(t, e, "an error answer: %v", m)
	assert.Contains(t, e["message"], `no host serves "nobody"`)
	// A legacy request before initialize is refused, saying what to do.
	m = answer(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	e, _ = m["error"].(map[string]any)
	require.NotNil(t, e, "an error answer: %v", m)
	assert.Contains(t, e["message"], "initialize first")
	assert.Equal(t, "{}", strings.TrimSpace(mustJSON(t, answer(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)["result"])))
	b.end()
}

// The bridge connects its legacy-era client to NATS when a legacy client
// initializes; when it cannot (the NATS server went away since the bridge
// started), initialize is answered with an error saying so, and the
// bridge lives on.
func TestBridgeLegacyClientCannotConnect(t *testing.T) {
	e, err := natsembed.Start(natsembed.Options{})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	b := startBridge(t, e.URL(), "nobody", 30*time.Second)
	answer := b.answer
	// The bridge serves once its first client is connected: a ping says so.
	assert.Equal(t, "{}", mustJSON(t, answer(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)["result"]))
	e.Shutdown()
	m := answer(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	er, _ := m["error"].(map[string]any)
	require.NotNil(t, er, "an error answer: %v", m)
	assert.Contains(t, er["message"], "legacy-era connection could not start")
	t.Logf("initialize: %v", er["message"])
	assert.Equal(t, "{}", mustJSON(t, answer(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)["result"]), "the bridge lives on")
	b.end()
	assert.Contains(t, b.stderr.String(), "the legacy-era connection did not start")
}

// bridgeRun is a `snodo bridge` process driven line by line.
type bridgeRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr testutil.Buffer
	wait   time.Duration // how long an answer may take
}

// startBridge starts `snodo bridge --nats url --server name`.
func startBridge(t *testing.T, url, name string, wait time.Duration) *bridgeRun {
	t.Helper()
	b := &bridgeRun{t: t, cmd: exec.Command(snodoBin, "bridge", "--nats", url, "--server", name), lines: make(chan string, 16), wait: wait}
	var err error
	b.stdin, err = b.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := b.cmd.StdoutPipe()
	require.NoError(t, err)
	b.cmd.Stderr = &b.stderr
	require.NoError(t, b.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		close(b.lines)
	}()
	return b
}

// answer writes one request line and returns the next line the bridge
// writes, which must be one JSON value.
func (b *bridgeRun) answer(req string) map[string]any {
	b.t.Helper()
	_, err := io.WriteString(b.stdin, req+"\n")
	require.NoError(b.t, err)
	line := testutil.Receive(b.t, b.lines, b.wait, "the bridge's answer to "+req)
	var m map[string]any
	require.NoError(b.t, json.Unmarshal([]byte(line), &m), "one JSON value per line: %q", line)
	return m
}

// end closes the bridge's stdin and checks that it exits 0.
func (b *bridgeRun) end() {
	b.t.Helper()
	require.NoError(b.t, b.stdin.Close())
	for range b.lines {
	}
	require.NoError(b.t, b.cmd.Wait(), "the bridge exits 0 at the end of its stdin; stderr:\n%s", b.stderr.String())
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// A client that goes away (its end of the bridge's stdout closed) ends
// the bridge at its next write, with exit status 141, not a SIGPIPE
// death, and nothing left running.
func TestBridgeClientGone(t *testing.T) {
	url := bridgedNATS(t)
	cmd := exec.Command(snodoBin, "bridge", "--nats", url, "--server", "nobody")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	require.NoError(t, stdout.Close())
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	err = testutil.Receive(t, done, 10*time.Second, "the bridge's exit after its client went away")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 141, ee.ExitCode(), "exit status (-1 is a signal)")
	_ = stdin.Close()
}

// A client that sends its last request and closes stdin still gets the
// answer: the bridge waits for the requests in flight (within its drain)
// before it exits.
func TestBridgeAnswersAfterStdinEnds(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged")
	cmd := exec.Command(snodoBin, "bridge", "--nats", url, "--server", "bridged")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":200},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n")
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	var m struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(out, &m), "one JSON line: %q", out)
	assert.Equal(t, 7, m.ID)
	assert.NotEmpty(t, m.Result, "a result: %s", out)
}

// A legacy client of a modern served server gets its list changes as
// plain notifications: the bridge listens on a host for it.
func TestBridgeListChangesReachALegacyClient(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged")
	changed := make(chan string, 4)
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy), mcp.WithNotificationHandler(func(_ context.Context, n *mcp.Notification) {
		select {
		case changed <- n.Method:
		default:
		}
	}))
	require.NotNil(t, c.Capabilities().Tools)
	require.True(t, c.Capabilities().Tools.ListChanged, "the bridge promises the list changes it forwards")
	_, err := c.Request(t.Context(), "test/emit", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	assert.Equal(t, "notifications/tools/list_changed", testutil.Receive(t, changed, 10*time.Second, "the list change at the legacy client"))
}

// A legacy served server's list changes reach the bridge's client (a
// legacy one: the served server's era) as plain notifications, which its
// capabilities promise. Before, a host refused a Listen on a legacy
// server, so none reached any client of the bridge.
func TestBridgeLegacyServerNotificationsReachTheClient(t *testing.T) {
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged", "-era", "legacy")
	changed := make(chan string, 4)
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy), mcp.WithNotificationHandler(func(_ context.Context, n *mcp.Notification) {
		select {
		case changed <- n.Method:
		default:
		}
	}))
	require.NotNil(t, c.Capabilities().Tools)
	require.True(t, c.Capabilities().Tools.ListChanged, "the bridge promises the list changes it forwards")
	_, err := c.Request(t.Context(), "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	assert.Equal(t, "notifications/tools/list_changed", testutil.Receive(t, changed, 10*time.Second, "the list change at the legacy client"))
}

// The TypeScript SDK's client gets a legacy served server's list changes
// through the bridge.
func TestBridgeLegacyNotificationsReachTheTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: install Node.js >= 20, then run bash test/peers/install.sh")
	}
	if _, err := os.Stat("../../test/peers/node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (%v): run bash test/peers/install.sh", err)
	}
	url := bridgedNATS(t)
	bridgedHost(t, url, "bridged", "-era", "legacy")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "../../test/peers/ts-client/bridge-client.mjs", snodoBin, url, "bridged", "notifications")
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	var seen struct {
		ListChanged bool `json:"listChanged"`
	}
	require.NoError(t, json.Unmarshal(out, &seen), "stdout: %s", out)
	assert.True(t, seen.ListChanged, "the list change reached the TypeScript client")
}

// After the host serving the name is stopped and another starts, the
// bridge opens its list-change subscription again, tells the legacy
// client its lists may have changed, and forwards the new host's list
// changes. Before, the subscription ended for good with the first host.
func TestBridgeListChangesAfterHostRestart(t *testing.T) {
	url := bridgedNATS(t)
	h := legacyHost(t, url)
	changed := make(chan string, 16)
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy), mcp.WithNotificationHandler(func(_ context.Context, n *mcp.Notification) {
		select {
		case changed <- n.Method:
		default:
		}
	}))
	require.NoError(t, h.Close())
	testutil.Receive(t, h.Done(), 10*time.Second, "the first host's servers reaped")
	h2 := legacyHost(t, url)
	t.Cleanup(func() {
		_ = h2.Close()
		testutil.Receive(t, h2.Done(), 10*time.Second, "the second host's servers reaped")
	})
	awaitToolsChanged(t, changed, 20*time.Second, "the gap's list change, once the subscription is open again")
	testutil.Eventually(t, func() bool {
		_, err := c.Request(t.Context(), "test/notify", map[string]any{"method": "notifications/prompts/list_changed"})
		return err == nil
	}, 10*time.Second, "a call through the new host")
	for len(changed) > 0 { // the gap's others
		<-changed
	}
	_, err := c.Request(t.Context(), "test/notify", map[string]any{"method": "notifications/tools/list_changed"})
	require.NoError(t, err)
	awaitToolsChanged(t, changed, 10*time.Second, "the new host's list change")
}

// A legacy client's resource subscription outlives the host that held
// it: once another host serves the name, the bridge subscribes there,
// tells the client the resource may have changed, and the new host's
// updates reach it. Before, updates stopped with the first host.
func TestBridgeResourceUpdatesAfterHostRestart(t *testing.T) {
	url := bridgedNATS(t)
	h := legacyHost(t, url)
	updated := make(chan string, 16)
	c := connectBridge(t, url, "bridged", mcp.WithEra(mcp.EraLegacy), mcp.WithNotificationHandler(func(_ context.Context, n *mcp.Notification) {
		if n.Method == "notifications/resources/updated" {
			select {
			case updated <- string(n.Params):
			default:
			}
		}
	}))
	ctx := t.Context()
	_, err := c.Request(ctx, "resources/subscribe", map[string]any{"uri": "test://watched"})
	require.NoError(t, err)
	_, err = c.Request(ctx, "test/touch", map[string]any{"uri": "test://watched"})
	require.NoError(t, err)
	assert.Contains(t, testutil.Receive(t, updated, 10*time.Second, "the first host's update"), "test://watched")

	require.NoError(t, h.Close())
	testutil.Receive(t, h.Done(), 10*time.Second, "the first host's servers reaped")
	h2 := legacyHost(t, url)
	t.Cleanup(func() {
		_ = h2.Close()
		testutil.Receive(t, h2.Done(), 10*time.Second, "the second host's servers reaped")
	})
	assert.Contains(t, testutil.Receive(t, updated, 20*time.Second, "the gap's update, once subscribed on the new host"), "test://watched")
	var res json.RawMessage
	testutil.Eventually(t, func() bool {
		res, err = c.Request(ctx, "test/touch", map[string]any{"uri": "test://watched"})
		return err == nil
	}, 10*time.Second, "a call through the new host")
	assert.Contains(t, string(res), `"notified":true`, "the new host's server holds the subscription")
	assert.Contains(t, testutil.Receive(t, updated, 10*time.Second, "the new host's update"), "test://watched")
}

// A modern client's subscription through the bridge ends when the host
// that held it goes away: the listen request is answered with an error,
// so the client knows to listen again, rather than waiting on a
// subscription nobody serves.
func TestBridgeListenEndsWithItsHost(t *testing.T) {
	url := bridgedNATS(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), mcp.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := remote.NewHost(context.Background(), url, remote.Serve("bridged", p))
	require.NoError(t, err)
	c := connectBridge(t, url, "bridged")
	require.Equal(t, mcp.EraModern, c.Era())
	sub, err := c.Listen(t.Context(), mcp.Filter{ToolsListChanged: true})
	require.NoError(t, err)
	defer sub.Close()
	require.NoError(t, h.Close())
	testutil.Receive(t, h.Done(), 10*time.Second, "the host's servers reaped")
	for range sub.Events() {
	}
	require.Error(t, sub.Err(), "the subscription ended with an error")
	assert.Contains(t, sub.Err().Error(), "listen again")
}

// awaitToolsChanged waits, at most within, for a
// notifications/tools/list_changed among the methods sent on changed,
// taking the others; what says which change the test waits for.
func awaitToolsChanged(t *testing.T, changed <-chan string, within time.Duration, what string) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m := <-changed:
			if m == "notifications/tools/list_changed" {
				return
			}
		case <-deadline:
			t.Fatalf("no tools/list_changed within %v: %s", within, what)
		}
	}
}

// legacyHost serves the test server (legacy era, a pool of one) as
// "bridged" on the NATS server at url, as `snodo node` serves it: with a
// legacy-era pool of one for legacy-era callers (remote.ServeLegacy),
// which serves the bridge's legacy clients, their calls and their
// subscriptions; the caller closes it.
func legacyHost(t *testing.T, url string) *remote.Host {
	t.Helper()
	cmd, args := testutil.Server(t, "-era", "legacy")
	p, err := supervisor.NewPool(context.Background(), mcp.Command(cmd, args...), 1)
	require.NoError(t, err)
	start := func(ctx context.Context, opts ...mcp.Option) (*supervisor.Pool, error) {
		return supervisor.NewPool(ctx, mcp.Command(cmd, args...), 1, supervisor.WithConnectOptions(opts...))
	}
	h, err := remote.NewHost(context.Background(), url, remote.Serve("bridged", p), remote.ServeLegacy("bridged", start))
	require.NoError(t, err)
	return h
}
