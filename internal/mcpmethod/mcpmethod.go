// Package mcpmethod names the MCP methods (and the extension identifiers
// and protocol versions) that more than one of snodo's packages sends,
// answers, declares or labels telemetry with. Users write a
// method's name as the specification spells it ("elicitation/create").
package mcpmethod

// The request that opens a subscription (internal/substream, the
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

// ModernVersions are the modern-era protocol versions snodo speaks,
// newest first (package snodo negotiates them), in a new slice.
func ModernVersions() []string { return []string{"2026-07-28"} }

// LegacyVersions are the legacy-era (initialize) protocol versions snodo
// speaks, newest first, in a new slice: package snodo negotiates them, and
// the command line's bridge answers a legacy host's initialize with one.
func LegacyVersions() []string {
	return []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
}
