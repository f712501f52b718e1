package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/httpserver"
	"github.com/snodo/snodo/test/oauthserver"
)

// An "http" entry of the --config file that names its OAuth client and
// scopes is authorized with them: the snodo binary prints the
// authorization URL, the user's browser (played here) comes back to its
// loopback port, and the call goes through; the next run uses the stored
// token without the browser.
func TestConfigHTTPEntryAuthorizesWithItsOAuthBlock(t *testing.T) {
	as := oauthserver.NewAS(t, nil)
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "legacy"} })
	config := t.TempDir()
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {"web": {"type": "http", "url": "`+rs.URL()+
		`", "oauth": {"clientId": "snodo-test-client", "scopes": ["tools:read", "tools:call"]}}}}`), 0o600))

	run := func() (stdout string, opened int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, snodoBin, "--config", path, "--server", "web", "tools")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+config, "HOME="+config)
		var out strings.Builder
		cmd.Stdout = &out
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var wg sync.WaitGroup
		wg.Go(func() { // the browser: opens each authorization URL snodo prints
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if i := strings.Index(line, "http"); i >= 0 && strings.Contains(line, "/authorize?") {
					opened++
					resp, err := http.Get(strings.Fields(line[i:])[0])
					if assert.NoError(t, err) {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		})
		wg.Wait()
		require.NoError(t, cmd.Wait(), "snodo tools; stdout:\n%s", out.String())
		return out.String(), opened
	}

	out, opened := run()
	assert.Contains(t, out, "echo")
	assert.Equal(t, 1, opened, "the user is asked once")
	require.NotEmpty(t, as.AuthRequests)
	assert.Equal(t, "snodo-test-client", as.AuthRequests[0].Get("client_id"), "the entry's clientId")
	assert.Equal(t, "tools:read tools:call", as.AuthRequests[0].Get("scope"), "the entry's scopes")

	out, opened = run()
	assert.Contains(t, out, "echo")
	assert.Zero(t, opened, "the stored token serves the next run")
}

// An entry's "oauth" may name a confidential pre-registered client: its
// secret comes from the environment variable "clientSecretEnv" names
// (never from the file), and "callbackPort" fixes the loopback redirect
// at http://localhost:PORT/callback, as the client was registered. The
// token request carries the secret; the user is asked once.
func TestConfigHTTPEntryWithClientSecretAndCallbackPort(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.AuthMethods = []string{"client_secret_basic"} })
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "modern"} })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close()) // free for snodo to listen on
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`{"mcpServers": {"web": {"type": "http", "url": %q,
		"oauth": {"clientId": "confidential-client", "clientSecretEnv": "SNODO_TEST_CLIENT_SECRET", "callbackPort": %d}}}}`, rs.URL(), port)), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	config := t.TempDir()
	cmd := exec.CommandContext(ctx, snodoBin, "--config", path, "--server", "web", "tools")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+config, "HOME="+config, "SNODO_TEST_CLIENT_SECRET=s3cret-from-env")
	var out strings.Builder
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	opened := 0
	var errText strings.Builder
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			errText.WriteString(line + "\n")
			if i := strings.Index(line, "http"); i >= 0 && strings.Contains(line, "/authorize?") {
				opened++
				resp, err := http.Get(strings.Fields(line[i:])[0])
				if assert.NoError(t, err) {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	})
	wg.Wait()
	require.NoError(t, cmd.Wait(), "stdout:\n%s\nstderr:\n%s", out.String(), errText.String())
	assert.Contains(t, out.String(), "echo")
	assert.Equal(t, 1, opened, "one login URL in the run")
	require.Len(t, as.AuthRequests, 1)
	assert.Equal(t, fmt.Sprintf("http://localhost:%d/callback", port), as.AuthRequests[0].Get("redirect_uri"))
	require.NotEmpty(t, as.TokenHeaders)
	id, secret, ok := (&http.Request{Header: as.TokenHeaders[0]}).BasicAuth()
	assert.True(t, ok, "client_secret_basic")
	assert.Equal(t, "confidential-client", id)
	assert.Equal(t, "s3cret-from-env", secret)
	assert.NotContains(t, errText.String(), "s3cret-from-env")
}

// A run whose stored token is about to expire and whose refresh token was
// revoked asks nobody: the refresh before the first request fails once,
// the token there is (still valid) is sent, and no login URL is printed
// (before: one per request, two in a run).
func TestFailedEarlyRefreshPrintsNoLoginURL(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true; a.ExpiresIn = 3600 })
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "legacy"} })
	config := t.TempDir()
	run := func() (stdout string, opened int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, snodoBin, "--url", rs.URL(), "tools")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+config, "HOME="+config)
		var out strings.Builder
		cmd.Stdout = &out
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var wg sync.WaitGroup
		wg.Go(func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if i := strings.Index(line, "http"); i >= 0 && strings.Contains(line, "/authorize?") {
					opened++
					resp, err := http.Get(strings.Fields(line[i:])[0])
					if assert.NoError(t, err) {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		})
		wg.Wait()
		require.NoError(t, cmd.Wait(), "snodo tools; stdout:\n%s", out.String())
		return out.String(), opened
	}
	_, opened := run()
	require.Equal(t, 1, opened)

	// The stored hour-long token has 20 s left, within its margin (a
	// minute); its refresh token is revoked.
	files, err := filepath.Glob(filepath.Join(config, "snodo", "oauth", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var stored map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &stored))
	var tok map[string]any
	require.NoError(t, json.Unmarshal(stored["token"], &tok))
	tok["issued"] = time.Now().Add(-time.Hour).Format(time.RFC3339Nano)
	tok["expiry"] = time.Now().Add(20 * time.Second).Format(time.RFC3339Nano)
	stored["token"], err = json.Marshal(tok)
	require.NoError(t, err)
	raw, err = json.Marshal(stored)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(files[0], raw, 0o600))
	as.RevokeRefresh()

	out, opened := run()
	assert.Contains(t, out, "echo")
	assert.Zero(t, opened, "a login URL was printed")
	assert.Equal(t, []string{"authorization_code", "refresh_token"}, as.GrantTypes(), "one refresh tried in the run")
}
