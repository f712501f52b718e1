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

// MarshalJSON writes c as MCP does: the flags of Sampling and
// Elicitation as members holding empty objects ({"form":{}}).
func (c ClientCapabilities) MarshalJSON() ([]byte, error) {
	w := capabilitiesWire{plainCapabilities: (*plainCapabilities)(&c)}
	if s := c.Sampling; s != nil {
		w.Sampling = flagsObject([2]string{"context", "tools"}, [2]bool{s.Context, s.Tools})
	}
	if e := c.Elicitation; e != nil {
		w.Elicitation = flagsObject([2]string{"form", "url"}, [2]bool{e.Form, e.URL})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the MCP form MarshalJSON writes: a flag is set when
// its member is present.
func (c *ClientCapabilities) UnmarshalJSON(b []byte) error {
	*c = ClientCapabilities{}
	w := capabilitiesWire{plainCapabilities: (*plainCapabilities)(c)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if f := w.Sampling; f != nil {
		c.Sampling = &SamplingCapability{Context: f.has("context"), Tools: f.has("tools")}
	}
	if f := w.Elicitation; f != nil {
		c.Elicitation = &ElicitationCapability{Form: f.has("form"), URL: f.has("url")}
	}
	return nil
}

// capabilitiesWire is ClientCapabilities as MCP writes it: its own
// members but for the flags, which these take the place of (a member of
// the outer struct wins over the embedded one's of the same name).
type capabilitiesWire struct {
	*plainCapabilities
	Sampling    *flags `json:"sampling,omitempty"`
	Elicitation *flags `json:"elicitation,omitempty"`
}

// plainCapabilities is ClientCapabilities without its JSON methods.
type plainCapabilities ClientCapabilities

// flags are capability flags as MCP writes them: a member, holding an
// empty object (or settings snodo does not read), per flag set.
type flags map[string]json.RawMessage

func (f flags) has(name string) bool {
	_, ok := f[name]
	return ok
}

// flagsObject is the flags object with those of names that are set.
func flagsObject(names [2]string, set [2]bool) *flags {
	f := flags{}
	for i, name := range names {
		if set[i] {
			f[name] = json.RawMessage("{}")
		}
	}
	return &f
}

// SamplingCapability declares sampling/createMessage support. Context:
// the includeContext parameter is honoured; Tools: tools and toolChoice
// are honoured. It takes its wire shape (each flag set a member holding
// an empty object, {"tools":{}}) inside ClientCapabilities.
type SamplingCapability struct {
	Context bool
	Tools   bool
}

// ElicitationCapability declares elicitation/create support: Form for
// form mode, URL for URL mode. Neither set means form mode only. It takes
// its wire shape (each flag set a member holding an empty object,
// {"form":{}}) inside ClientCapabilities.
type ElicitationCapability struct {
	Form bool
	URL  bool
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
