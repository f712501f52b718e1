package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/safetext"
)

// prompter asks the user for what elicitation/create requests, on the
// terminal: the questions on stderr, the answers from stdin. One request
// is asked at a time.
type prompter struct {
	out         io.Writer
	interactive bool
	lines       chan string // stdin, a line at a time; closed at EOF

	mu sync.Mutex
}

// newPrompter starts reading stdin when it is a terminal. The reading
// goroutine lives as long as the process: a blocked terminal read cannot
// be interrupted.
func newPrompter(sio stdio) *prompter {
	p := &prompter{out: sio.err, interactive: sio.inTTY && sio.errTTY, lines: make(chan string)}
	if p.interactive {
		go func() {
			defer close(p.lines)
			in := bufio.NewScanner(sio.in)
			for in.Scan() {
				p.lines <- in.Text()
			}
		}()
	}
	return p
}

// elicitParams is the part of elicitation/create params snodo uses.
type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	URL             string          `json:"url"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// elicit asks the user and returns the ElicitResult: accept with the
// answers, or decline when stdin is not a terminal or it ends.
func (p *prompter) elicit(ctx context.Context, raw json.RawMessage) (any, error) {
	var params elicitParams
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, fmt.Errorf("malformed elicitation/create params: %w", err)
	}
	if !p.interactive {
		fmt.Fprintf(p.out, "snodo: declined the server's request for input (%q): stdin is not a terminal\n", params.Message)
		return declined, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "The server asks: %s\n", safetext.Visible(params.Message))
	if params.Mode == "url" {
		fmt.Fprintf(p.out, "  Open %s\n", oneLine(params.URL))
		line, ok := p.ask(ctx, "  Press Enter when done, or type n to decline: ")
		if !ok || strings.HasPrefix(strings.ToLower(line), "n") {
			return declined, ctx.Err()
		}
		return map[string]string{"action": "accept"}, nil
	}
	var schema handlers.ElicitSchema
	_ = json.Unmarshal(params.RequestedSchema, &schema)
	content := map[string]any{}
	for _, name := range propertyOrder(params.RequestedSchema) {
		v, ok := p.field(ctx, name, schema.Properties[name], slices.Contains(schema.Required, name))
		if !ok {
			fmt.Fprintln(p.out, "  (declined)")
			return declined, ctx.Err()
		}
		if v != nil {
			content[name] = v
		}
	}
	return map[string]any{"action": "accept", "content": content}, nil
}

// field asks for one property until the answer fits its schema (the
// check snodo makes before sending the answer: type, choices, lengths,
// format, range); an empty answer skips an optional one. ok is false when
// stdin ended.
func (p *prompter) field(ctx context.Context, name string, prop handlers.PropertySchema, required bool) (v any, ok bool) {
	label := oneLine(cmp.Or(prop.Title, name))
	hint := cmp.Or(prop.Type, "string")
	if choices := choiceList(prop); choices != "" {
		hint = "one of " + choices
		if prop.Type == "array" {
			hint = "one or more of " + choices + ", separated by commas"
		}
	}
	if !required {
		hint += ", optional"
	}
	if prop.Description != "" {
		fmt.Fprintf(p.out, "  %s\n", oneLine(prop.Description))
	}
	for {
		line, ok := p.ask(ctx, fmt.Sprintf("  %s (%s): ", label, hint))
		if !ok {
			return nil, false
		}
		line = strings.TrimSpace(line)
		if line == "" && !required {
			return nil, true
		}
		v, err := convert(line, prop)
		if err == nil {
			err = fits(name, prop, v)
		}
		if err == nil {
			return v, true
		}
		fmt.Fprintf(p.out, "  %s; try again (Ctrl-D declines)\n", oneLine(err.Error()))
	}
}

// fits checks one answer against its field's schema, as snodo checks the
// whole form before sending it, so that a wrong answer is asked again
// instead of failing the server's request.
func fits(name string, prop handlers.PropertySchema, v any) error {
	form := handlers.ElicitParams{RequestedSchema: &handlers.ElicitSchema{Type: "object",
		Properties: map[string]handlers.PropertySchema{name: prop}}}
	err := form.Check(map[string]any{name: v})
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), fmt.Sprintf("the field %q: ", name)))
	}
	return nil
}

// choiceList lists an enum field's values (a multi-select's items), each
// with its title when the schema gives one; "" for a field that is no
// enum.
func choiceList(prop handlers.PropertySchema) string {
	opts := prop.Options()
	if len(opts) == 0 {
		return ""
	}
	titles := map[string]string{}
	for i, name := range prop.EnumNames {
		if i < len(prop.Enum) {
			titles[prop.Enum[i]] = name
		}
	}
	choices := prop.OneOf
	if prop.Items != nil {
		choices = prop.Items.AnyOf
	}
	for _, c := range choices {
		titles[c.Const] = c.Title
	}
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = o
		if t := titles[o]; t != "" && t != o {
			out[i] += " (" + t + ")"
		}
	}
	return oneLine(strings.Join(out, ", "))
}

// ask prints the question and waits for a line.
func (p *prompter) ask(ctx context.Context, question string) (string, bool) {
	fmt.Fprint(p.out, question)
	select {
	case line, ok := <-p.lines:
		return line, ok
	case <-ctx.Done():
		return "", false
	}
}

// convert turns an answer into the JSON type the schema asks for: a
// multi-select (type array) takes its values separated by commas.
func convert(s string, prop handlers.PropertySchema) (any, error) {
	if s == "" {
		return nil, fmt.Errorf("an answer is required")
	}
	switch prop.Type {
	case "array":
		var items []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		return items, nil
	case "integer":
		return strconv.ParseInt(s, 10, 64)
	case "number":
		return strconv.ParseFloat(s, 64)
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("answer yes or no")
	}
	return s, nil
}

// propertyOrder is the names of a schema's properties in the order the
// server wrote them, so the questions come in that order.
func propertyOrder(schema json.RawMessage) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(top["properties"]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return names
		}
		name, _ := t.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return names
		}
		names = append(names, name)
	}
	return names
}
