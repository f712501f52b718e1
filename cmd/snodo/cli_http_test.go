package main_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snodo/snodo/test/httpserver"
)

// --url reaches a Streamable HTTP server (snodo's HTTP test server, in
// this process) in both eras, and an "http" entry of the --config file
// does too.
func TestURLBothEras(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			hs := httptest.NewServer(&httpserver.HTTP{Era: era})
			defer hs.Close()
			url := hs.URL + "/mcp"
			r := snodo(t, "info", "--url", url).want(t, 0)
			if !strings.Contains(r.stdout, era+", protocol") || !strings.Contains(r.stdout, "snodo-http-testserver") {
				t.Errorf("info --url:\n%s", r.stdout)
			}
			var res struct {
				Content []struct{ Text string } `json:"content"`
			}
			snodo(t, "--json", "call", "echo", `{"text":"hi"}`, "--url", url, "--header", "X-Api-Key=k").want(t, 0).decode(t, &res)
			if len(res.Content) != 1 || res.Content[0].Text != "hi" {
				t.Errorf("call --url: %+v", res)
			}
			path := filepath.Join(t.TempDir(), "mcp.json")
			if err := os.WriteFile(path, []byte(`{"mcpServers": {"web": {"type": "http", "url": "`+url+`", "headers": {"X-Api-Key": "k"}}}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			r = snodo(t, "--config", path, "--server", "web", "tools").want(t, 0)
			if !strings.Contains(r.stdout, "echo") {
				t.Errorf("--server web tools:\n%s", r.stdout)
			}
			r = snodo(t, "--config", path, "servers").want(t, 0)
			if !strings.Contains(r.stdout, "web") || !strings.Contains(r.stdout, era) {
				t.Errorf("servers:\n%s", r.stdout)
			}
		})
	}
}

func TestURLUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"url and command":    {"tools", "--url", "http://127.0.0.1:1/mcp", "--", "srv"},
		"url and server":     {"tools", "--url", "http://127.0.0.1:1/mcp", "--config", "x.json", "--server", "a"},
		"not http":           {"tools", "--url", "ftp://example.com/mcp"},
		"header without url": {"tools", "--header", "K=V", "--", "srv"},
		"header not K=V":     {"tools", "--url", "http://127.0.0.1:1/mcp", "--header", "K"},
		"env with url":       {"tools", "--url", "http://127.0.0.1:1/mcp", "--env", "A=1"},
		"demo with url":      {"demo", "--url", "http://127.0.0.1:1/mcp"},
	} {
		t.Run(name, func(t *testing.T) {
			snodo(t, args...).want(t, 2)
		})
	}
}

// logout forgets a server's token; it needs --url.
func TestLogout(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	snodo(t, "logout", "--url", "https://mcp.example.com/mcp").want(t, 0)
	snodo(t, "logout").want(t, 2)
}
