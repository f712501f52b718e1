package snodo

import (
	"context"
	"encoding/json"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// The per-request _meta of the modern era: what every request carries,
// encoded once per change (the log level) and spliced into each request's
// params by the connection as the line is written. Negotiation (era.go)
// builds the base members; nothing decodes them again.

// Keys of the modern per-request _meta object.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// buildMeta is the required modern _meta for version.
func buildMeta(version string, cfg *mcpConfig) map[string]json.RawMessage {
	v, _ := json.Marshal(version)
	info, _ := json.Marshal(cfg.clientInfo)
	caps, _ := json.Marshal(cfg.capabilities)
	return map[string]json.RawMessage{metaProtocolVersion: v, metaClientInfo: info, metaClientCapabilities: caps}
}

// request sends one request, adding what the negotiated era requires:
// in the modern era the connection merges the encoded _meta into params
// as it writes the line (the caller's own _meta members win).
func (c *Client) request(ctx context.Context, method string, params any, opts *connection.CallOptions) (json.RawMessage, error) {
	return c.send(ctx, method, params, c.encodedMeta(), opts)
}

// setMeta sets the modern _meta to baseMeta plus level, if any: the
// base itself without one (an idle client keeps one copy), else the base
// with the level's member added before its closing brace.
func (c *Client) setMeta(level LoggingLevel) {
	encoded := c.mcp.baseMeta
	if base := c.mcp.baseMeta; level != "" && len(base) > len("{}") {
		encoded = append(append(make([]byte, 0, len(base)+len(metaLogLevel)+len(level)+8), base[:len(base)-1]...), `,"`+metaLogLevel+`":`...)
		encoded = append(jsonrpc.AppendString(encoded, string(level)), '}')
	}
	c.mcp.meta.Store(&encoded)
}

// encodedMeta is the _meta every request carries in the negotiated era,
// as one JSON object; nil in the legacy era. Callers must not change it.
func (c *Client) encodedMeta() []byte {
	if p := c.mcp.meta.Load(); p != nil {
		return *p
	}
	return nil
}
