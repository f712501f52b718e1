// Package jsonrpc holds the JSON-RPC 2.0 wire pieces snodo shares between
// its layers: the Error type, the error codes, a zero-allocation scanner
// that classifies incoming lines, and append-style encoders for outgoing
// ones. It knows nothing of processes, actors or MCP.
package jsonrpc
