// Package mcpmethod names the MCP methods (and the extension identifiers)
// that more than one of snodo's packages sends, answers, declares or
// labels telemetry with. Users write a
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

// TasksExtension is the identifier of the modern-era tasks extension, in
// the capabilities' extensions (the client declares it; a server that
// offers it runs tools as tasks).
const TasksExtension = "io.modelcontextprotocol/tasks"
