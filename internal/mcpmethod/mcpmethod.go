// Package mcpmethod names the MCP methods that more than one of snodo's
// packages sends, answers or labels telemetry with. Users write a
// method's name as the specification spells it ("elicitation/create").
package mcpmethod

// The request that opens a subscription (package subscription, the
// remote client, telemetry).
const Listen = "subscriptions/listen"

// The requests an MCP server sends its client (package handlers decodes
// them; the connection and the input rounds answer them).
const (
	Elicitation = "elicitation/create"
	Sampling    = "sampling/createMessage"
	ListRoots   = "roots/list"
	Ping        = "ping"
)
