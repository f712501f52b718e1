package bench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo/test/testutil"
)

// The go-sdk client through `snodo bridge` (the gateway's engine on
// stdio), against the TypeScript reference server (server-everything)
// served by a `snodo node`: every progress update, resource updates after
// subscribe. go-sdk speaks the legacy era.
func TestBridgeGoSDKClientEverything(t *testing.T) {
	snodoBin := filepath.Join(t.TempDir(), "snodo")
	build := exec.Command("go", "build", "-o", snodoBin, "./cmd/snodo")
	build.Dir = ".." // the snodo module: its own go.sum
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building snodo: %v\n%s", err, out)
	}
	entry := testutil.PeerPath(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	config := filepath.Join(t.TempDir(), "servers.json")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": testutil.NodePath(t), "args": []string{entry, "stdio"}},
	}})
	if err := os.WriteFile(config, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	node := exec.Command(snodoBin, "node", "--config", config)
	var nodeErr testutil.Buffer
	node.Stderr = &nodeErr
	node.WaitDelay = 5 * time.Second
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		url := ""
		for sc.Scan() {
			if url == "" {
				url = sc.Text() // the embedded NATS server's, first
			}
			if strings.HasPrefix(sc.Text(), "serving ") {
				serving <- url
				break
			}
		}
		for sc.Scan() {
		}
	}()
	defer func() {
		_ = node.Process.Signal(syscall.SIGTERM)
		_ = node.Wait()
	}()
	url := testutil.Receive(t, serving, 30*time.Second, "the node's serving line; stderr: "+nodeErr.String())

	var progress, updates atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		ResourceUpdatedHandler:      func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { updates.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bridge := exec.Command(snodoBin, "bridge", "--nats", url, "--server", "everything")
	bridge.Stderr = os.Stderr
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: bridge}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if name := cs.InitializeResult().ServerInfo.Name; name != "mcp-servers/everything" {
		t.Errorf("server info %q, want the served server's own", name)
	}

	params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.5, "steps": 5}}
	params.SetProgressToken("p-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	// go-sdk runs notification handlers off its reader (see the gateway's
	// go-sdk test); the order on the wire is checked by the TypeScript
	// client's and the gateway's raw-line tests.
	testutil.Eventually(t, func() bool { return progress.Load() == 5 }, 5*time.Second, "5 progress updates")
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) == 0 {
		t.Fatalf("resources: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: rs.Resources[0].URI}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, func() bool { return updates.Load() > 0 }, 15*time.Second, "a resource update after subscribe")
	// Sampling, elicitation and logs of a legacy served server reach a
	// remote caller once its hosts relay them; then this test asks them
	// too, as TestGatewayGoSDKClientEverything does.
}
