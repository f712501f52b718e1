package snodo

import (
	"encoding/json"
	"strings"
)

// The MCP shapes the typed calls return. Fields a server may leave out are
// zero; members snodo does not model are kept in Meta (the _meta object)
// or dropped. Schemas and structured content stay raw JSON so they can be
// handed to a JSON Schema validator or json.Unmarshal unchanged.
// Every Meta is the _meta object as the server sent it, raw (the package
// doc says how to read it).

// Implementation names a client or server: its name and version, with an
// optional display title.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is an image a server offers for display next to a tool, resource,
// prompt or implementation. Treat Src as untrusted.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"` // "light" or "dark"
}

// Annotations hint at how a client should use an object: who it is meant
// for ("user", "assistant"), its priority (0 to 1) and when it last
// changed (ISO 8601).
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// Tool is one tool a server offers. InputSchema and OutputSchema are JSON
// Schema objects, raw.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Execution    *ToolExecution   `json:"execution,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Meta         json.RawMessage  `json:"_meta,omitempty"`
}

// ToolExecution is how a tool runs (legacy era, 2025-11-25). TaskSupport
// says whether it runs as a task: "required" (CallTool runs it as one
// and waits), "optional" (CallTool calls it plainly; CallToolAsTask
// runs it as a task), or "forbidden" and "" (never as a task).
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
}

// The values of ToolExecution.TaskSupport.
const (
	taskRequired  = "required"
	taskOptional  = "optional"
	taskForbidden = "forbidden"
)

// ToolAnnotations are the server's hints about a tool's behaviour. They
// are claims by the server, not guarantees; nil means "not said".
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Content is one content block of a tool result or prompt message. Type
// says which fields are set:
//
//	"text"           Text
//	"image", "audio" Data (the bytes, base64 on the wire) and MimeType
//	"resource"       Resource (an embedded resource's contents)
//	"resource_link"  URI, Name, Title, Description, MimeType, Size
//
// Decoding a result undoes the base64 of Data (and of an embedded
// resource's Blob): data that is not standard base64 fails the call.
type Content struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        []byte            `json:"data,omitempty"`
	MimeType    string            `json:"mimeType,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        json.RawMessage   `json:"_meta,omitempty"`
}

// CallToolResult is what a tool call returned. IsError reports an error
// inside the tool (bad input, a failed API call): the model should see it,
// and it is not a Go error. Protocol failures (unknown tool, bad params)
// are returned by CallTool as a *Error instead.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// Text joins the text of the result's text blocks with newlines.
func (r *CallToolResult) Text() string { return joinText(r.Content) }

func joinText(blocks []Content) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Resource is one resource a server lists.
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	Icons       []Icon          `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI
// template.
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	Icons       []Icon          `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceContents is the content of one resource: Text for text, Blob
// for binary data (the bytes; base64 on the wire, which decoding the
// result undoes: a blob that is not standard base64 fails the call).
type ResourceContents struct {
	URI      string          `json:"uri"`
	MimeType string          `json:"mimeType,omitempty"`
	Text     string          `json:"text,omitempty"`
	Blob     []byte          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// ReadResourceResult is what resources/read returned: one or more
// contents (a directory may yield several).
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     json.RawMessage    `json:"_meta,omitempty"`
}

// Prompt is one prompt template a server offers.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"`
}

// PromptArgument is one argument a prompt template accepts.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a rendered prompt; Role is "user" or
// "assistant".
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// GetPromptResult is a rendered prompt.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// Reference names what an argument completion is for. Type says which,
// and which field names it:
//
//	"ref/prompt"    a prompt: Name, the prompt's name
//	"ref/resource"  a resource template: URI, its URI template
//
// For example Reference{Type: "ref/prompt", Name: "greet"}, or
// Reference{Type: "ref/resource", URI: "file:///{path}"}.
type Reference struct {
	Type string `json:"type"`           // "ref/prompt" or "ref/resource"
	Name string `json:"name,omitempty"` // "ref/prompt": the prompt's name
	URI  string `json:"uri,omitempty"`  // "ref/resource": the resource template's URI template
}

// CompleteRequest asks for completions of one argument's value. Context
// holds the values of arguments already filled in, by name.
type CompleteRequest struct {
	Ref      Reference
	Argument string            // the argument's name
	Value    string            // what the user typed so far
	Context  map[string]string // optional
}

// Completion is the server's suggestions for an argument value. Total,
// when non-zero, is how many matches exist; HasMore says there are more
// than Values holds.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// LoggingLevel is a syslog severity, as MCP names it: "debug" (most
// verbose), "info", "notice", "warning", "error", "critical", "alert" or
// "emergency". Pass the name: c.SetLoggingLevel(ctx, "warning").
type LoggingLevel string

func (l LoggingLevel) valid() bool {
	switch l {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}
