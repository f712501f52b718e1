package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func init() { register("mcp-go", connectMCPGo) }

type mcpGoClient struct {
	c      *client.Client
	cancel context.CancelFunc
}

type declineElicitation struct{}

func (declineElicitation) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

func connectMCPGo(ctx context.Context, o Options) (Client, error) {
	var t transport.Interface = transport.NewStdioWithOptions(o.Command, nil, o.Args, transport.WithCommandStderrWriter(io.Discard))
	if o.URL != "" {
		ht, err := transport.NewStreamableHTTP(o.URL, transport.WithHTTPBasicClient(PeerHTTPClient()))
		if err != nil {
			return nil, err
		}
		t = ht
	}
	c := client.NewClient(t, client.WithElicitationHandler(declineElicitation{}))
	// Start starts the transport and installs the notification and
	// server-request handlers.
	if err := c.Start(context.Background()); err != nil {
		return nil, err
	}
	m := &mcpGoClient{c: c}
	if o.OnEvent != nil {
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationToolsListChanged) {
				o.OnEvent()
			}
		})
	}
	version := ModernVersion
	if o.Era == Legacy {
		version = LegacyVersion
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1.0.0"}
	req.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		c.Close()
		return nil, err
	}
	if res.ProtocolVersion != version {
		c.Close()
		return nil, fmt.Errorf("mcp-go negotiated %s, wanted %s", res.ProtocolVersion, version)
	}
	if o.OnEvent != nil {
		// Listen blocks for the life of the stream; the server holds emit
		// calls until a subscription is open.
		lctx, cancel := context.WithCancel(context.Background())
		m.cancel = cancel
		go c.Listen(lctx, mcp.SubscriptionFilter{ToolsListChanged: true}) //nolint:errcheck
	}
	return m, nil
}

func (m *mcpGoClient) Call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if args != nil {
		req.Params.Arguments = args
	}
	res, err := m.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed", tool)
	}
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			texts = append(texts, t.Text)
			break
		}
	}
	return firstText(texts)
}

func (m *mcpGoClient) Close() error {
	if m.cancel != nil {
		m.cancel()
	}
	return m.c.Close()
}
