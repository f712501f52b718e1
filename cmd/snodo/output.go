package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/snodo/snodo"
)

// infoDoc is what `snodo info` prints.
type infoDoc struct {
	Era             string                   `json:"era"`
	ProtocolVersion string                   `json:"protocolVersion"`
	ServerInfo      snodo.Implementation     `json:"serverInfo"`
	Capabilities    snodo.ServerCapabilities `json:"capabilities"`
	Instructions    string                   `json:"instructions,omitempty"`
	Host            string                   `json:"host,omitempty"`    // over NATS: the id of the host that answered
	Label           string                   `json:"label,omitempty"`   // and its label
	Sandbox         string                   `json:"sandbox,omitempty"` // the limits the server runs inside, in words
}

// printJSON writes v as one compact JSON document and a newline.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode the output as JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// printRaw writes a raw JSON result: indented for people, compact for
// scripts.
func printRaw(w io.Writer, raw json.RawMessage, indent bool) error {
	var buf bytes.Buffer
	var err error
	if indent {
		err = json.Indent(&buf, raw, "", "  ")
	} else {
		err = json.Compact(&buf, raw)
	}
	if err != nil {
		buf.Reset()
		buf.Write(raw) // not valid JSON: show it as it came
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// printInfo writes the server's description as aligned fields.
func printInfo(w io.Writer, v infoDoc, indent string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	server := oneLine(v.ServerInfo.Name + " " + v.ServerInfo.Version)
	if v.ServerInfo.Title != "" {
		server += " (" + oneLine(v.ServerInfo.Title) + ")"
	}
	fmt.Fprintf(tw, "%sserver\t%s\n", indent, server)
	fmt.Fprintf(tw, "%sera\t%s, protocol %s\n", indent, v.Era, v.ProtocolVersion)
	fmt.Fprintf(tw, "%scapabilities\t%s\n", indent, describeCapabilities(v.Capabilities))
	if v.Instructions != "" {
		fmt.Fprintf(tw, "%sinstructions\t%s\n", indent, oneLine(v.Instructions))
	}
	if v.Host != "" {
		fmt.Fprintf(tw, "%shost\t%s (%s)\n", indent, oneLine(v.Label), oneLine(v.Host))
	}
	if v.Sandbox != "" {
		fmt.Fprintf(tw, "%ssandbox\t%s\n", indent, oneLine(v.Sandbox))
	}
	_ = tw.Flush()
}

// describeCapabilities lists what the server offers, in words.
func describeCapabilities(c snodo.ServerCapabilities) string {
	var out []string
	listed := func(name string, lc *snodo.ListChangedCapability) {
		if lc != nil {
			out = append(out, name+map[bool]string{true: " (list changes)", false: ""}[lc.ListChanged])
		}
	}
	listed("tools", c.Tools)
	listed("prompts", c.Prompts)
	if r := c.Resources; r != nil {
		var extra []string
		if r.Subscribe {
			extra = append(extra, "subscribe")
		}
		if r.ListChanged {
			extra = append(extra, "list changes")
		}
		out = append(out, "resources"+parenthesised(extra))
	}
	if c.Logging != nil {
		out = append(out, "logging")
	}
	if c.Completions != nil {
		out = append(out, "completions")
	}
	for _, m := range []map[string]json.RawMessage{c.Experimental, c.Extensions} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out = append(out, keys...)
	}
	if len(out) == 0 {
		return "none"
	}
	return oneLine(strings.Join(out, ", "))
}

func parenthesised(words []string) string {
	if len(words) == 0 {
		return ""
	}
	return " (" + strings.Join(words, ", ") + ")"
}

// printTools writes one tool a line: its name and the first line of its
// description, cut to maxWidth when it is not 0.
func printTools(w io.Writer, tools []snodo.Tool, indent string, maxWidth int) {
	if len(tools) == 0 {
		fmt.Fprintln(w, indent+"(no tools)")
		return
	}
	nameWidth := 0
	for _, t := range tools {
		nameWidth = max(nameWidth, utf8.RuneCountInString(oneLine(t.Name)))
	}
	for _, t := range tools {
		desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
		line := fmt.Sprintf("%s%-*s  %s", indent, nameWidth, oneLine(t.Name), oneLine(desc))
		if maxWidth > 0 {
			line = cut(line, maxWidth-1)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// cut shortens s to n runes, marking the cut with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n || n < 1 {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// resultText is a tool result for people: its text blocks, a short note
// for every other block, or its structured content when it has no blocks.
func resultText(res *snodo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "image", "audio":
			parts = append(parts, fmt.Sprintf("[%s %s, %d bytes]", c.Type, c.MimeType, len(c.Data)))
		case "resource":
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, "[resource "+c.Resource.URI+"]")
			}
		case "resource_link":
			parts = append(parts, "[link "+c.URI+"]")
		default:
			parts = append(parts, "["+c.Type+" content]")
		}
	}
	if len(parts) == 0 && len(res.StructuredContent) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, res.StructuredContent, "", "  ") == nil {
			return buf.String()
		}
	}
	return strings.Join(parts, "\n")
}

// printResult writes a tool result's text, each line indented; text that
// ends in a newline gets no extra blank line.
func printResult(w io.Writer, res *snodo.CallToolResult, indent string) {
	for line := range strings.SplitSeq(strings.TrimSuffix(resultText(res), "\n"), "\n") {
		fmt.Fprintln(w, indent+line)
	}
}

// printEvent writes one subscription event: with --json, as a JSON object
// on one line; otherwise the time, the method and its params without the
// protocol's _meta.
func printEvent(w io.Writer, ev snodo.Event, asJSON bool) error {
	if asJSON {
		return printJSON(w, map[string]any{"method": ev.Method, "params": ev.Params})
	}
	line := time.Now().Format("15:04:05") + "  " + oneLine(ev.Method)
	var params map[string]json.RawMessage
	if json.Unmarshal(ev.Params, &params) == nil {
		delete(params, "_meta")
		if len(params) > 0 {
			b, _ := json.Marshal(params)
			line += "  " + string(b)
		}
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// describeFilter names the notifications a filter selects.
func describeFilter(f snodo.Filter) string {
	var out []string
	if f.ToolsListChanged {
		out = append(out, "tools/list_changed")
	}
	if f.PromptsListChanged {
		out = append(out, "prompts/list_changed")
	}
	if f.ResourcesListChanged {
		out = append(out, "resources/list_changed")
	}
	for _, uri := range f.ResourceSubscriptions {
		out = append(out, "resources/updated "+uri)
	}
	if len(out) == 0 {
		return "nothing (the server honours none of the requested notifications)"
	}
	return strings.Join(out, ", ")
}
