package snodo

import (
	"context"
	"encoding/json"

	"github.com/snodo/snodo/connection"
)

// mcpConfig holds the MCP-level options.
type mcpConfig struct {
	handler ServerRequestHandler
}

// mcpState is what Connect settled about the server.
type mcpState struct{}

// start starts the connection. Era negotiation lands with the MCP client.
func (c *Client) start(ctx context.Context, cfg *config) error {
	cfg.conn.Handler = cfg.mcp.handler
	conn, err := connection.Start(ctx, cfg.conn)
	if err != nil {
		return err
	}
	c.conn = conn
	return nil
}

// request sends one request, adding what the negotiated era requires.
func (c *Client) request(ctx context.Context, method string, params any, opts *connection.CallOptions) (json.RawMessage, error) {
	return c.conn.Request(ctx, method, params, opts)
}

// requestMeta is the _meta every request carries in the negotiated era
// (nil in the legacy era). Callers' own _meta members win over it.
func (c *Client) requestMeta() map[string]json.RawMessage { return nil }

// legacy reports whether the server speaks a legacy (initialize-era)
// protocol version, where subscriptions/listen does not exist.
func (c *Client) legacy() bool { return false }
