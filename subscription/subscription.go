// Package subscription holds what a user sees of an MCP
// subscriptions/listen stream: the Filter that says which notifications
// it asks for, and each Event the server sends on it. Package snodo
// gives both under its own name too (snodo.Filter, snodo.Event are
// these types), opens subscriptions (Client.Listen, ListenTo) and
// exports the sentinels a subscription ends with
// (snodo.ErrSubscriptionClosed, snodo.ErrSubscriptionTeardown,
// snodo.ErrSubscriptionQueueFull); the machinery that runs one is
// internal to snodo.
package subscription

import "encoding/json"

// Filter selects the notifications a subscription asks for; it is the
// "notifications" member of subscriptions/listen and of its
// acknowledgement. The zero value asks for nothing.
type Filter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// Event is one notification the server sent on a subscription. Params is
// the raw params object, _meta included.
type Event struct {
	Method string
	Params json.RawMessage
}
