package handlers

import (
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
)

// Typed MCP server requests. A handler decodes the params with
// Request.Elicitation or Request.Sampling (roots/list has none) and
// returns the matching result type; the same code serves both eras.

// Elicitation decodes the params of an elicitation/create request. The
// error, for another method or malformed params, is a -32602
// *jsonrpc.Error a handler can return as it is.
func (r *Request) Elicitation() (*ElicitParams, error) {
	var p ElicitParams
	if err := r.decode(mcpmethod.Elicitation, &p); err != nil {
		return nil, err
	}
	switch p.Mode {
	case "", "form":
		if p.RequestedSchema == nil {
			return nil, invalidParams(r.Method, "form mode needs a requestedSchema")
		}
	case "url":
		if p.URL == "" || p.ElicitationID == "" {
			return nil, invalidParams(r.Method, "url mode needs a url and an elicitationId")
		}
	default:
		return nil, invalidParams(r.Method, fmt.Sprintf("unknown mode %q", p.Mode))
	}
	return &p, nil
}

// Sampling decodes the params of a sampling/createMessage request. The
// error, for another method or malformed params, is a -32602
// *jsonrpc.Error a handler can return as it is.
func (r *Request) Sampling() (*CreateMessageParams, error) {
	var p CreateMessageParams
	if err := r.decode(mcpmethod.Sampling, &p); err != nil {
		return nil, err
	}
	if len(p.Messages) == 0 {
		return nil, invalidParams(r.Method, "no messages")
	}
	return &p, nil
}

func (r *Request) decode(method string, v any) error {
	if r.Method != method {
		return invalidParams(r.Method, "the request is "+r.Method+", not "+method)
	}
	if len(r.Params) == 0 {
		return invalidParams(r.Method, "no params")
	}
	if err := json.Unmarshal(r.Params, v); err != nil {
		return invalidParams(r.Method, "malformed params: "+err.Error())
	}
	return nil
}

func invalidParams(method, msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + method + ": " + msg}
}

// ElicitParams are the params of elicitation/create. Mode is "form"
// (also when empty) or "url". Form mode asks the user to fill in the
// fields of RequestedSchema; URL mode asks the user to visit URL (the
// answer happens out of band), and the server later sends
// notifications/elicitation/complete with ElicitationID.
type ElicitParams struct {
	Mode            string                     `json:"mode,omitempty"`
	Message         string                     `json:"message"`
	RequestedSchema *ElicitSchema              `json:"requestedSchema,omitempty"`
	ElicitationID   string                     `json:"elicitationId,omitempty"`
	URL             string                     `json:"url,omitempty"`
	Meta            map[string]json.RawMessage `json:"_meta,omitempty"`
}

// ElicitSchema is the restricted JSON Schema of a form: an object whose
// properties are strings, numbers, integers, booleans, single-select
// enums (strings) and multi-select enums (arrays of strings).
type ElicitSchema struct {
	Type       string                    `json:"type"`
	Properties map[string]PropertySchema `json:"properties"`
	Required   []string                  `json:"required,omitempty"`
}

// PropertySchema describes one form field. Type is "string", "number",
// "integer", "boolean" or "array" (a multi-select enum); Options lists
// the allowed values of an enum field.
type PropertySchema struct {
	Type        string          `json:"type"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
	// Strings.
	Format    string `json:"format,omitempty"` // "email", "uri", "date" or "date-time"
	MinLength *int   `json:"minLength,omitempty"`
	MaxLength *int   `json:"maxLength,omitempty"`
	// Numbers and integers.
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	// Single-select enums: Enum (with the legacy EnumNames) or OneOf.
	Enum      []string     `json:"enum,omitempty"`
	EnumNames []string     `json:"enumNames,omitempty"`
	OneOf     []EnumOption `json:"oneOf,omitempty"`
	// Multi-select enums (Type "array").
	Items    *EnumItems `json:"items,omitempty"`
	MinItems *int       `json:"minItems,omitempty"`
	MaxItems *int       `json:"maxItems,omitempty"`
}

// EnumOption is one titled choice of an enum.
type EnumOption struct {
	Const string `json:"const"`
	Title string `json:"title,omitempty"`
}

// EnumItems are the choices of a multi-select enum: Enum or AnyOf.
type EnumItems struct {
	Type  string       `json:"type,omitempty"`
	Enum  []string     `json:"enum,omitempty"`
	AnyOf []EnumOption `json:"anyOf,omitempty"`
}

// Options lists the values an enum field allows (for a multi-select,
// each item's); nil when the field is not an enum.
func (p *PropertySchema) Options() []string {
	var opts []string
	add := func(values []string, choices []EnumOption) {
		opts = append(opts, values...)
		for _, c := range choices {
			opts = append(opts, c.Const)
		}
	}
	if p.Items != nil {
		add(p.Items.Enum, p.Items.AnyOf)
	} else {
		add(p.Enum, p.OneOf)
	}
	return opts
}

// ElicitResult answers elicitation/create. Action is "accept" (the user
// submitted; in form mode Content holds the answer), "decline" (the user
// said no) or "cancel" (the user dismissed the request). Content's values
// are each a string, a number, a boolean or a []string (multi-select).
// Before it is sent, snodo checks Content against the requested schema.
type ElicitResult struct {
	Action  string                     `json:"action"`
	Content map[string]any             `json:"content,omitempty"`
	Meta    map[string]json.RawMessage `json:"_meta,omitempty"`
}

// CreateMessageParams are the params of sampling/createMessage: a
// conversation for the client's model. Tools and ToolChoice are set only
// for clients that declared sampling with tools.
type CreateMessageParams struct {
	Messages         []SamplingMessage          `json:"messages"`
	ModelPreferences *ModelPreferences          `json:"modelPreferences,omitempty"`
	SystemPrompt     string                     `json:"systemPrompt,omitempty"`
	IncludeContext   string                     `json:"includeContext,omitempty"` // "none", "thisServer", "allServers"
	Temperature      *float64                   `json:"temperature,omitempty"`
	MaxTokens        int                        `json:"maxTokens"`
	StopSequences    []string                   `json:"stopSequences,omitempty"`
	Metadata         json.RawMessage            `json:"metadata,omitempty"`
	Tools            []SamplingTool             `json:"tools,omitempty"`
	ToolChoice       *ToolChoice                `json:"toolChoice,omitempty"`
	Meta             map[string]json.RawMessage `json:"_meta,omitempty"`
}

// SamplingMessage is one message of a sampling conversation. Role is
// "user" or "assistant".
type SamplingMessage struct {
	Role    string                     `json:"role"`
	Content SamplingContents           `json:"content"`
	Meta    map[string]json.RawMessage `json:"_meta,omitempty"`
}

// SamplingContents are a message's content blocks. On the wire MCP allows
// one block or an array; both decode, and one block is written as a
// single object, which every protocol version accepts.
type SamplingContents []SamplingContent

// UnmarshalJSON reads one block or an array of blocks.
func (c *SamplingContents) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var one SamplingContent
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*c = SamplingContents{one}
		return nil
	}
	var many []SamplingContent
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*c = many
	return nil
}

// MarshalJSON writes one block as an object, several as an array, none
// as [] (content is required: never null).
func (c SamplingContents) MarshalJSON() ([]byte, error) {
	switch len(c) {
	case 0:
		return []byte("[]"), nil
	case 1:
		return json.Marshal(c[0])
	}
	return json.Marshal([]SamplingContent(c))
}

// SamplingContent is one content block of a sampling message. Type says
// which fields are set:
//
//	"text"           Text
//	"image", "audio" Data (base64) and MimeType
//	"tool_use"       ID, Name, Input (the model calls a tool)
//	"tool_result"    ToolUseID, Content, StructuredContent, IsError
type SamplingContent struct {
	Type              string                     `json:"type"`
	Text              string                     `json:"text,omitempty"`
	Data              string                     `json:"data,omitempty"`
	MimeType          string                     `json:"mimeType,omitempty"`
	ID                string                     `json:"id,omitempty"`
	Name              string                     `json:"name,omitempty"`
	Input             json.RawMessage            `json:"input,omitempty"`
	ToolUseID         string                     `json:"toolUseId,omitempty"`
	Content           []json.RawMessage          `json:"content,omitempty"` // a tool result's content blocks, raw
	StructuredContent json.RawMessage            `json:"structuredContent,omitempty"`
	IsError           bool                       `json:"isError,omitempty"`
	Annotations       json.RawMessage            `json:"annotations,omitempty"`
	Meta              map[string]json.RawMessage `json:"_meta,omitempty"`
}

// ModelPreferences are the server's hints for choosing a model; each
// priority is from 0 to 1.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// ModelHint names a model (or a family, as a substring) the server
// prefers.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// SamplingTool is a tool the model may call while sampling. The schemas
// are raw JSON Schema objects.
type SamplingTool struct {
	Name         string                     `json:"name"`
	Title        string                     `json:"title,omitempty"`
	Description  string                     `json:"description,omitempty"`
	InputSchema  json.RawMessage            `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage            `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage            `json:"annotations,omitempty"`
	Meta         map[string]json.RawMessage `json:"_meta,omitempty"`
}

// ToolChoice says whether the model must, may or must not call tools:
// Mode "auto" (default), "required" or "none".
type ToolChoice struct {
	Mode string `json:"mode,omitempty"`
}

// CreateMessageResult answers sampling/createMessage: the model's
// message, the model's name and why it stopped ("endTurn",
// "stopSequence", "maxTokens", "toolUse").
type CreateMessageResult struct {
	Role       string                     `json:"role"`
	Content    SamplingContents           `json:"content"`
	Model      string                     `json:"model"`
	StopReason string                     `json:"stopReason,omitempty"`
	Meta       map[string]json.RawMessage `json:"_meta,omitempty"`
}

// Root is a directory or file the server may work in: a file:// URI
// and an optional name.
type Root struct {
	URI  string                     `json:"uri"`
	Name string                     `json:"name,omitempty"`
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
}

// ListRootsResult answers roots/list. Roots is written as [] when empty,
// never null.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}

// MarshalJSON writes an empty list as [].
func (r ListRootsResult) MarshalJSON() ([]byte, error) {
	roots := r.Roots
	if roots == nil {
		roots = []Root{}
	}
	return json.Marshal(struct {
		Roots []Root `json:"roots"`
	}{roots})
}
