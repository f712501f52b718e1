package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { register("go-sdk", connectGoSDK) }

type goSDKClient struct{ cs *mcp.ClientSession }

func connectGoSDK(ctx context.Context, o Options) (Client, error) {
	opts := &mcp.ClientOptions{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}
	if o.OnEvent != nil {
		// With this handler set, Connect opens subscriptions/listen for
		// tools list changes in the modern era.
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { o.OnEvent() }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1.0.0"}, opts)
	version := ModernVersion
	if o.Era == Legacy {
		version = LegacyVersion
	}
	var t mcp.Transport = &mcp.CommandTransport{Command: exec.Command(o.Command, o.Args...)}
	if o.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: o.URL, HTTPClient: PeerHTTPClient()}
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		cs.Close()
		return nil, fmt.Errorf("go-sdk negotiated %s, wanted %s", got, version)
	}
	return &goSDKClient{cs: cs}, nil
}

func (g *goSDKClient) Call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	p := &mcp.CallToolParams{Name: tool}
	if args != nil {
		p.Arguments = args
	}
	res, err := g.cs.CallTool(ctx, p)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed", tool)
	}
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
			break
		}
	}
	return firstText(texts)
}

func (g *goSDKClient) Close() error { return g.cs.Close() }
