// Command conformance is the MCP client the official conformance suite
// (@modelcontextprotocol/conformance, client mode) runs: snodo over
// Streamable HTTP. The server URL is its last argument, the scenario is
// in MCP_CONFORMANCE_SCENARIO and the scenario's context (JSON) in
// MCP_CONFORMANCE_CONTEXT. It does what each scenario asks of a client
// and exits 0, or 1 with the error on stderr. `make conformance` runs the
// whole suite against it.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/handlers"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance SERVER_URL (MCP_CONFORMANCE_SCENARIO names the scenario)")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sctx scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sctx); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: MCP_CONFORMANCE_CONTEXT is not JSON: %v\n", err)
			os.Exit(2)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second) // run.sh gives each scenario 60 s
	defer cancel()
	if err := run(ctx, scenario, url, &sctx); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: scenario %q: %v\n", scenario, err)
		os.Exit(1)
	}
}

// scenarioContext is what MCP_CONFORMANCE_CONTEXT may carry.
type scenarioContext struct {
	ToolCalls []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"toolCalls"`
}

// run connects and plays the scenario.
func run(ctx context.Context, scenario, url string, sctx *scenarioContext) error {
	opts := []snodo.Option{
		snodo.WithClientInfo("snodo-conformance", "1.0.0"),
		snodo.WithProbeTimeout(40 * time.Second), // the suite starts every scenario at once: a loaded machine is slow
		snodo.WithServerRequestHandler(answer),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{}}),
		snodo.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if os.Getenv("SNODO_TRACE") != "" { // every message on the wire, to stderr
		opts = append(opts, snodo.WithWireTrace(func(dir connection.Direction, line []byte) {
			fmt.Fprintf(os.Stderr, "%s %s %s\n", time.Now().Format("15:04:05.000"), dir, line)
		}))
	}
	if isAuthScenario(scenario) {
		auth, err := authOption(scenario)
		if err != nil {
			return err
		}
		opts = append(opts, auth)
	}
	c, err := snodo.ConnectHTTP(ctx, url, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if isAuthScenario(scenario) {
		// Listing needs the token; calling may need more scopes (the
		// step-up scenario's 403).
		if _, err := c.ListTools(ctx); err != nil {
			return err
		}
		_, err := c.CallTool(ctx, "test-tool", map[string]any{})
		return err
	}
	switch scenario {
	case "initialize", "request-metadata", "json-schema-ref-no-deref":
		if scenario != "request-metadata" {
			_, err = c.ListTools(ctx)
		}
		return err
	case "tools_call":
		return callListed(ctx, c, "add_numbers", map[string]any{"a": 5, "b": 3})
	case "elicitation-sep1034-client-defaults":
		return callListed(ctx, c, "test_client_elicitation_defaults", map[string]any{})
	case "sse-retry":
		return callListed(ctx, c, "test_reconnection", map[string]any{})
	case "json-schema-2020-12-preservation":
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if t.Name == "json_schema_2020_12_tool" {
				_, err := c.CallTool(ctx, "json_schema_echo", map[string]any{"schema": t.InputSchema})
				return err
			}
		}
		return errors.New("tool json_schema_2020_12_tool not listed")
	case "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if _, err := c.CallTool(ctx, name, map[string]any{}); err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %s: %v (some cases are meant to fail)\n", name, err)
			}
		}
		return nil
	case "http-standard-headers":
		return everyVerb(ctx, c)
	case "http-custom-headers":
		if _, err := c.ListTools(ctx); err != nil {
			return err
		}
		for _, call := range sctx.ToolCalls {
			if _, err := c.CallTool(ctx, call.Name, call.Arguments); err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", call.Name, err)
			}
		}
		return nil
	case "http-invalid-tool-headers":
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if _, err := c.CallTool(ctx, t.Name, map[string]any{"region": "us-west1"}); err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", t.Name, err)
			}
		}
		return nil
	case "sep-2640-client-no-prefetch":
		_, err := listSkills(ctx, c)
		return err
	case "sep-2640-client-verify-digest", "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter":
		skills, err := listSkills(ctx, c)
		if err != nil {
			return err
		}
		for _, s := range skills {
			if err := loadSkill(ctx, c, s); err != nil {
				fmt.Fprintf(os.Stderr, "conformance: skill %s rejected: %v\n", s.URI, err)
			}
		}
		return nil
	}
	// Any other scenario (authorization ones among them): connect and list.
	_, err = c.ListTools(ctx)
	return err
}

// callListed lists the tools, checks that name is among them and calls it.
func callListed(ctx context.Context, c *snodo.Client, name string, args map[string]any) error {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == name {
			res, err := c.CallTool(ctx, name, args)
			if err == nil && res.IsError {
				err = fmt.Errorf("tool %s answered isError: %s", name, res.Text())
			}
			return err
		}
	}
	return fmt.Errorf("tool %q not listed", name)
}

// everyVerb calls the first tool, resource and prompt the server lists.
func everyVerb(ctx context.Context, c *snodo.Client) error {
	if tools, err := c.ListTools(ctx); err == nil && len(tools) > 0 {
		_, _ = c.CallTool(ctx, tools[0].Name, map[string]any{})
	}
	if res, err := c.ListResources(ctx); err == nil && len(res) > 0 {
		_, _ = c.ReadResource(ctx, res[0].URI)
	}
	if prompts, err := c.ListPrompts(ctx); err == nil && len(prompts) > 0 {
		_, _ = c.GetPrompt(ctx, prompts[0].Name, map[string]string{})
	}
	return nil
}

// answer is the server-request handler: it accepts every form with the
// defaults its schema gives (and confirms what asks to be confirmed).
func answer(ctx context.Context, req *snodo.ServerRequest) (any, error) {
	if req.Method != "elicitation/create" {
		return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: req.Method}
	}
	p, err := req.Elicitation()
	if err != nil {
		return nil, err
	}
	content := map[string]any{}
	if p.RequestedSchema != nil {
		for name, prop := range p.RequestedSchema.Properties {
			var v any
			if len(prop.Default) > 0 && json.Unmarshal(prop.Default, &v) == nil {
				content[name] = v
			} else if prop.Type == "boolean" {
				content[name] = true
			}
		}
	}
	return &handlers.ElicitResult{Action: "accept", Content: content}, nil
}

// skill is one entry of skills/list (the skills extension).
type skill struct {
	URI         string            `json:"uri"`
	Frontmatter map[string]string `json:"frontmatter"`
	Resources   []struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   int    `json:"size"`
	} `json:"resources"`
}

func listSkills(ctx context.Context, c *snodo.Client) ([]skill, error) {
	raw, err := c.Request(ctx, "skills/list", nil)
	if err != nil {
		return nil, err
	}
	var res struct {
		Skills []skill `json:"skills"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("skills/list result: %w", err)
	}
	return res.Skills, nil
}

// loadSkill reads the skill's SKILL.md and checks it against the entry
// (size, digest, frontmatter); only a skill that passes has its other
// files read.
func loadSkill(ctx context.Context, c *snodo.Client, s skill) error {
	verified := func(uri string) (string, error) {
		res, err := c.ReadResource(ctx, uri)
		if err != nil {
			return "", err
		}
		if len(res.Contents) == 0 {
			return "", fmt.Errorf("%s: no contents", uri)
		}
		text := res.Contents[0].Text
		for _, r := range s.Resources {
			if r.URI != uri {
				continue
			}
			if r.Size != 0 && r.Size != len(text) {
				return "", fmt.Errorf("%s: %d bytes, the entry says %d", uri, len(text), r.Size)
			}
			sum := sha256.Sum256([]byte(text))
			if d := "sha256:" + hex.EncodeToString(sum[:]); r.Digest != "" && r.Digest != d {
				return "", fmt.Errorf("%s: digest %s, the entry says %s", uri, d, r.Digest)
			}
		}
		return text, nil
	}
	body, err := verified(s.URI)
	if err != nil {
		return err
	}
	for k, v := range frontmatter(body) {
		if want, ok := s.Frontmatter[k]; ok && want != v {
			return fmt.Errorf("frontmatter %s is %q, the entry says %q", k, v, want)
		}
	}
	for k := range s.Frontmatter {
		if _, ok := frontmatter(body)[k]; !ok {
			return fmt.Errorf("frontmatter %s missing from %s", k, s.URI)
		}
	}
	for _, r := range s.Resources {
		if r.URI != s.URI {
			if _, err := verified(r.URI); err != nil {
				return err
			}
		}
	}
	return nil
}

// frontmatter reads the "key: value" lines between a file's leading ---
// lines.
func frontmatter(text string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return out
	}
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "---" {
			break
		}
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return out
}
