package demoserver

import (
	"encoding/json"
	"strconv"
)

// ProtocolVersion is the only MCP version the demo server speaks.
const ProtocolVersion = "2026-07-28"

// The _meta keys of the modern era.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// JSON-RPC and MCP error codes the server answers with.
const (
	codeInvalidRequest      = -32600
	codeMethodNotFound      = -32601
	codeInvalidParams       = -32602
	codeUnsupportedProtocol = -32022
)

// message is any line a client sends: a request (ID and Method), or a
// notification (Method only). The demo server never sends requests, so it
// never receives responses.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// requestMeta is the part of a request's params._meta the server reads.
type requestMeta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ProgressToken      json.RawMessage `json:"progressToken"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// response is what the server writes for a request.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// notification is what the server writes for progress and events.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// obj is shorthand for the JSON objects results are built from.
type obj = map[string]any

// idKey turns a request ID (a JSON number or string) into a map key;
// the number 1 and the string "1" stay distinct.
func idKey(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return strconv.Quote(s)
	}
	return string(id)
}
