package servers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/servers"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// gateway is an actor-only MCP gateway, the one docs/actors.md walks:
// it serves the servers of a file through a Router, forwards calls as
// messages, and receives replies, progress, notifications, subscription
// events and lifecycle events as messages, each saying which server (and
// member) it came from. It never blocks its mailbox and starts no
// goroutine. out tells the test what it saw; kill asks the test to
// kill -9 a server.
type gateway struct {
	file   *servers.File
	out    chan<- string
	kill   chan<- int
	router *servers.Router
	pids   map[string]int // the server pid of each member, from the lifecycle events
	seen   map[string]bool
}

func (g *gateway) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		g.pids, g.seen = map[string]int{}, map[string]bool{}
		var err error
		g.router, err = servers.StartRouter(context.Background(), ctx.ActorSystem(), ctx.Self(), g.file,
			supervisor.WithEventsTo(ctx.Self()),
			supervisor.WithConnectOptions(snodo.WithNotificationHandler(snodo.NotificationsTo(ctx.ActorSystem(), ctx.Self()))))
		if err != nil {
			g.tell("start failed: %v", err)
		}
	case *servers.RouterReady:
		if msg.Err != nil {
			g.tell("not ready: %v", msg.Err)
			return
		}
		g.ready(ctx)
	case *snodo.ToolReply:
		if msg.Tag == "logging" {
			return
		}
		if msg.Err != nil {
			g.tell("%v from %s failed: %v", msg.Tag, msg.Server, msg.Err)
			return
		}
		g.tell("%v from %s", msg.Tag, msg.Server)
	case *snodo.Progress:
		g.tell("%v progress from %s", msg.Tag, msg.Server)
	case *snodo.Reply:
		if msg.Err != nil && msg.Tag == "emit" && g.seen["killed"] {
			// The server sends the notification before it answers test/emit,
			// and the test kills it on the notification: the answer may lose
			// that race (killed by signal 9), which is the chaos asked for.
			return
		}
		if msg.Err != nil {
			g.tell("%v from %s failed: %v", msg.Tag, msg.Server, msg.Err)
		}
		if msg.Tag == "slow" {
			g.tell("slow done from %s", msg.Server)
		}
	case *snodo.Notification:
		if msg.Method == "notifications/message" {
			g.tell("log from %s", msg.Server)
		}
	case *snodo.ListenReply:
		if msg.Err != nil {
			g.tell("listen failed: %v", msg.Err)
			return
		}
		g.tell("listening on %s", msg.Server)
		g.emit(ctx, msg.Member)
	case *snodo.SubscriptionEvent:
		switch msg.Method {
		case "notifications/tools/list_changed":
			g.tell("tools changed on %s", msg.Server)
			if !g.seen["killed"] {
				g.seen["killed"] = true
				g.kill <- g.pids[msg.Member] // chaos: the server holding the subscription dies
			}
		case supervisor.ResubscribedMethod:
			g.tell("resubscribed on %s", msg.Server)
		}
	case *supervisor.LifecycleEvent:
		if msg.Kind == "connected" {
			g.pids[msg.Member] = msg.ServerPID
			if msg.Total > 0 {
				g.tell("restarted %s", msg.Server)
			}
		}
	}
}

// ready makes the calls, by server name, once every pool is up.
func (g *gateway) ready(ctx actor.Context) {
	to := func(server string, call any) { ctx.Request(g.router.PID(), &servers.To{Server: server, Call: call}) }
	to("test", &snodo.ToolCall{Name: "add", Args: map[string]int{"a": 2, "b": 3}, Tag: "sum"})
	to("everything", &snodo.ToolCall{Name: "echo", Args: map[string]string{"message": "hi"}, Tag: "echo"})
	to("test", &snodo.Call{Method: "test/progress", Params: map[string]int{"count": 2}, Progress: true, Tag: "slow"})
	to("test", &snodo.Call{Method: "test/notify", Tag: "notify", Params: map[string]any{
		"method": "notifications/message", "params": map[string]string{"level": "info", "data": "hello"}}})
	// server-everything logs on its own once asked to (on every member:
	// logging is per server), and then ignores EOF: only the pool's
	// shutdown grace stops it.
	pool, _ := g.router.Pool("everything")
	for _, m := range pool.Members() {
		ctx.Request(m.PID(), &snodo.Call{Method: "logging/setLevel", Params: map[string]string{"level": "debug"}, Tag: "level"})
		ctx.Request(m.PID(), &snodo.ToolCall{Name: "toggle-simulated-logging", Tag: "logging"})
	}
	to("test", &snodo.ListenCall{Filter: snodo.Filter{ToolsListChanged: true}, Tag: "tools"})
}

// emit asks the test server of member to announce a change to its tools.
func (g *gateway) emit(ctx actor.Context, member string) {
	pool, _ := g.router.Pool("test")
	for _, m := range pool.Members() {
		if m.Origin().Member == member {
			ctx.Request(m.PID(), &snodo.Call{Method: "test/emit", Tag: "emit",
				Params: map[string]string{"method": "notifications/tools/list_changed"}})
		}
	}
}

// tell reports what the gateway saw, once each.
func (g *gateway) tell(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !g.seen[line] {
		g.seen[line] = true
		g.out <- line
	}
}

// gatewayFile names the repository's test server (a pool of 3) and the
// real server-everything (a pool of 2), with no shutdownGrace.
func gatewayFile(t *testing.T) *servers.File {
	bin, err := testutil.BuildServer()
	require.NoError(t, err)
	everything, err := filepath.Abs("../test/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	require.NoError(t, err)
	if _, err := os.Stat(everything); err != nil {
		t.Fatalf("server-everything is not installed (%v): run bash test/peers/install.sh", err)
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not on PATH: install Node.js >= 20, then run bash test/peers/install.sh")
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	f, err := servers.Parse("gateway.json", []byte(`{"mcpServers": {
		"test":       {"command": `+q(bin)+`, "snodo": {"pool": 3}},
		"everything": {"command": `+q(node)+`, "args": [`+q(everything)+`, "stdio"], "snodo": {"pool": 2, "era": "legacy"}}
	}}`))
	require.NoError(t, err)
	return f
}

// The gateway of issue 28, end to end: two named servers, calls,
// progress, notifications tagged by server, a listen through a message,
// a kill -9 with restart and marker, then stop. It leaves no process and
// no goroutine, and the actor system logs no dead letter — with no
// shutdownGrace in the file, though server-everything ignores EOF once
// it logs.
func TestGatewayEndToEnd(t *testing.T) {
	logs := &testutil.LogRecorder{}
	sys := snodoactor.NewQuietSystem(logs.Logger())
	out := make(chan string, 256)
	kill := make(chan int, 1)
	g := &gateway{file: gatewayFile(t), out: out, kill: kill}
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return g }))

	want := map[string]bool{
		"sum from test": false, "echo from everything": false,
		"slow progress from test": false, "slow done from test": false,
		"log from test": false, "log from everything": false,
		"listening on test": false, "tools changed on test": false,
		"restarted test": false, "resubscribed on test": false,
	}
	missing := len(want)
	deadline := time.After(60 * time.Second)
	for missing > 0 {
		select {
		case line := <-out:
			t.Log(line)
			if done, ok := want[line]; ok && !done {
				want[line] = true
				missing--
			} else if !ok {
				assert.Fail(t, "unexpected", line)
			}
		case server := <-kill:
			require.NoError(t, syscall.Kill(server, syscall.SIGKILL))
		case <-deadline:
			t.Fatalf("the gateway saw only %v", want)
		}
	}

	t0 := time.Now()
	sys.Root.Stop(pid) // the router it owns follows, and the router's pools
	// The grace (2 s) to SIGTERM, 2 s more to SIGKILL, and room.
	testutil.Receive(t, g.router.Done(), 14*time.Second, "every server reaped")
	t.Logf("every server reaped %s after the gateway stopped", time.Since(t0).Round(time.Millisecond))
	assert.Empty(t, testutil.ChildPIDs(), "no server left")
	// The one dead letter a stop can race: the gateway's Terminated reaching
	// an owner watch (the tools subscription's, ListenTo the gateway) that
	// its own end released at the same moment, as the router stopped it.
	// protoactor logs that system message; nothing is lost by it.
	var deadLetters []string
	for _, m := range logs.Messages() {
		if strings.Contains(m, "DeadLetter") && !(strings.Contains(m, "snodo-owner-watch") && strings.Contains(m, "message=who:")) {
			deadLetters = append(deadLetters, m)
		}
	}
	assert.Empty(t, deadLetters, "dead letters logged")
	sys.Shutdown()
	testutil.VerifyNone(t)
}
