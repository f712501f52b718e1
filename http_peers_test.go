package snodo

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/snodo/snodo/connection"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Streamable HTTP against real servers nobody here wrote, both eras.

// startHTTPPeer runs command with args plus the address flag addrFlag
// (a free local port filled in) and returns the MCP endpoint once it
// answers; the server is killed and reaped when the test ends.
func startHTTPPeer(t *testing.T, path string, command string, args ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	for i, a := range args {
		if a == "ADDR" {
			args[i] = addr
		}
	}
	cmd := exec.Command(command, args...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr + path
	deadline := time.Now().Add(20 * time.Second)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 20 s: %v", command, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goEverythingHTTP is go-sdk's conformance server over Streamable HTTP:
// stateless (modern and legacy without a session) or with sessions.
func goEverythingHTTP(t *testing.T, stateless bool) string {
	return startHTTPPeer(t, "", peerPath(t, "bin/everything-server"), "-http", "ADDR", "-stateless="+strconv.FormatBool(stateless))
}

func TestHTTPGoEverythingBothEras(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool
		era       Era
	}{{"modern", true, EraModern}, {"legacy-session", false, EraLegacy}} {
		t.Run(tc.name, func(t *testing.T) {
			url := goEverythingHTTP(t, tc.stateless)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c, err := ConnectHTTP(ctx, url)
			require.NoError(t, err)
			assert.Equal(t, tc.era, c.Era())
			tools, err := c.ListTools(ctx)
			require.NoError(t, err)
			assert.NotEmpty(t, tools)
			res, err := c.CallTool(ctx, "test_simple_text", map[string]any{})
			require.NoError(t, err)
			assert.False(t, res.IsError)
			assert.NotEmpty(t, res.Text())
			var progress []Progress
			_, err = c.CallTool(ctx, "test_tool_with_progress", map[string]any{}, OnProgress(func(p Progress) { progress = append(progress, p) }))
			require.NoError(t, err)
			assert.NotEmpty(t, progress, "progress arrives on the request's SSE stream")
			require.NoError(t, c.Close())
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Done not closed 10 s after Close")
			}
			assert.ErrorIs(t, c.Err(), connection.ErrClosed)
		})
	}
}

// Listen over modern HTTP: subscriptions/listen is a long-lived POST
// whose SSE stream carries the events; closing it ends the subscription.
func TestHTTPGoEverythingListenModern(t *testing.T) {
	url := goEverythingHTTP(t, true)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := ConnectHTTP(ctx, url)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, EraModern, c.Era())
	sub, err := c.Listen(ctx, Filter{ToolsListChanged: true})
	require.NoError(t, err)
	assert.True(t, sub.Acknowledged().ToolsListChanged)
	_, err = c.CallTool(ctx, "test_trigger_tool_change", map[string]any{})
	require.NoError(t, err)
	select {
	case ev := <-sub.Events():
		assert.Equal(t, "notifications/tools/list_changed", ev.Method)
	case <-time.After(10 * time.Second):
		t.Fatal("no event on the listen stream within 10 s")
	}
	sub.Close()
	<-sub.Done()
	_, err = c.ListTools(ctx)
	assert.NoError(t, err, "the client lives on after the subscription")
}
