package snodo

import (
	"encoding/json"
)

// ClientCapabilities is what the client declares it can do: in initialize
// (legacy era) and in every request's _meta (modern era). Declare only
// what your ServerRequestHandler answers: servers offer features
// (sampling, elicitation and roots tools, say) only to clients that
// declared them. The zero value declares nothing.
type ClientCapabilities struct {
	// Roots: the handler answers roots/list; ListChanged promises
	// notifications/roots/list_changed (legacy era).
	Roots *ListChangedCapability `json:"roots,omitempty"`
	// Sampling: the handler answers sampling/createMessage.
	Sampling *SamplingCapability `json:"sampling,omitempty"`
	// Elicitation: the handler answers elicitation/create.
	Elicitation *ElicitationCapability `json:"elicitation,omitempty"`
	// Experimental and Extensions map identifiers to settings objects
	// (raw JSON; "{}" declares support with no settings).
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// SamplingCapability declares sampling/createMessage support. Context:
// the includeContext parameter is honoured; Tools: tools and toolChoice
// are honoured.
type SamplingCapability struct {
	Context bool
	Tools   bool
}

// MarshalJSON writes the flags as the empty objects MCP uses.
func (s SamplingCapability) MarshalJSON() ([]byte, error) {
	return flagsObject(map[string]bool{"context": s.Context, "tools": s.Tools}), nil
}

// UnmarshalJSON reads the MCP form.
func (s *SamplingCapability) UnmarshalJSON(b []byte) error {
	m, err := readFlags(b)
	s.Context, s.Tools = m["context"], m["tools"]
	return err
}

// ElicitationCapability declares elicitation/create support: Form for
// form mode, URL for URL mode. Neither set means form mode only.
type ElicitationCapability struct {
	Form bool
	URL  bool
}

// MarshalJSON writes the flags as the empty objects MCP uses.
func (e ElicitationCapability) MarshalJSON() ([]byte, error) {
	return flagsObject(map[string]bool{"form": e.Form, "url": e.URL}), nil
}

// UnmarshalJSON reads the MCP form.
func (e *ElicitationCapability) UnmarshalJSON(b []byte) error {
	m, err := readFlags(b)
	e.Form, e.URL = m["form"], m["url"]
	return err
}

func flagsObject(flags map[string]bool) []byte {
	set := map[string]struct{}{}
	for k, on := range flags {
		if on {
			set[k] = struct{}{}
		}
	}
	b, _ := json.Marshal(set) // cannot fail: string keys, empty structs
	return b
}

func readFlags(b []byte) (map[string]bool, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	m := make(map[string]bool, len(raw))
	for k := range raw {
		m[k] = true
	}
	return m, nil
}

// ServerCapabilities is what the server declared: in server/discover
// (modern era) or its initialize result (legacy era). A nil member means
// the server does not offer that feature.
type ServerCapabilities struct {
	Tools        *ListChangedCapability     `json:"tools,omitempty"`
	Resources    *ResourcesCapability       `json:"resources,omitempty"`
	Prompts      *ListChangedCapability     `json:"prompts,omitempty"`
	Logging      *struct{}                  `json:"logging,omitempty"`
	Completions  *struct{}                  `json:"completions,omitempty"`
	Tasks        *TasksCapability           `json:"tasks,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// TasksCapability is a legacy-era (2025-11-25) server's tasks: which
// requests it runs as tasks (Requests, such as {"tools":{"call":{}}}), and
// whether it answers tasks/list and tasks/cancel (non-nil). In the modern
// era tasks are the extension "io.modelcontextprotocol/tasks" in
// Extensions instead.
type TasksCapability struct {
	List     *struct{}       `json:"list,omitempty"`
	Cancel   *struct{}       `json:"cancel,omitempty"`
	Requests json.RawMessage `json:"requests,omitempty"`
}

// ListChangedCapability says a list may change (a server's tools or
// prompts, a client's roots); ListChanged promises its list_changed
// notifications.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability says the server offers resources; Subscribe that
// single resources can be watched, ListChanged that the list may change.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}
