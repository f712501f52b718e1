package snodo

import (
	"context"
	tgt "github.com/snodo/snodo/internal/target"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

func TestTargetNamesWithoutSecrets(t *testing.T) {
	require.Equal(t, "my-server", Command("my-server", "--token", "s3cret").String())
	require.Equal(t, "https://user:xxxxx@example.com/mcp", HTTP("https://user:pw@example.com/mcp?key=s3cret#x").String())
	require.Equal(t, "", Target{}.String())
}

func TestTargetConnects(t *testing.T) {
	_, err := Target{}.Connect(t.Context())
	require.ErrorContains(t, err, "snodo.Command")

	c := testutil.Start(t, func(command string, args []string) (*Client, error) {
		return Command(command, args...).Connect(t.Context())
	})
	_, err = c.ListTools(t.Context())
	require.NoError(t, err)
}

func TestTargetKeepsItsArgs(t *testing.T) {
	args := []string{"a", "b"}
	tg := Command("x", args...)
	args[0] = "changed"
	_, got := tgt.Target(tg).Command()
	require.Equal(t, []string{"a", "b"}, got)
}

// No option is silently ignored: each transport refuses the options only
// the other one has, before anything starts or is dialled.
func TestConnectRefusesTheOtherTransportsOptions(t *testing.T) {
	for _, opt := range []struct {
		name string
		opt  Option
	}{
		{"WithHTTPClient", WithHTTPClient(&http.Client{})},
		{"WithHTTPHeader", WithHTTPHeader("X-Key", "v")},
		{"WithOAuth", WithOAuth(OAuth{ClientID: "id", Authorize: func(context.Context, string) (url.Values, error) { return nil, nil }})},
	} {
		_, err := Connect(t.Context(), "no-such-command-is-started", nil, opt.opt)
		require.ErrorContains(t, err, "Connect: "+opt.name+" applies to a Streamable HTTP server")
		_, err = Command("no-such-command-is-started").Connect(t.Context(), opt.opt)
		require.ErrorContains(t, err, opt.name)
	}
	for _, opt := range []struct {
		name string
		opt  Option
	}{
		{"WithEnv", WithEnv("K", "v")},
		{"WithoutEnv", WithoutEnv("K")},
		{"WithCleanEnv", WithCleanEnv()},
		{"WithDir", WithDir("/")},
		{"WithStderr", WithStderr(io.Discard)},
		{"WithShutdownGrace", WithShutdownGrace(time.Second)},
	} {
		_, err := ConnectHTTP(t.Context(), "http://127.0.0.1:1/mcp", opt.opt)
		require.ErrorContains(t, err, "ConnectHTTP: "+opt.name+" applies to a server snodo starts as a command")
		_, err = HTTP("http://127.0.0.1:1/mcp").Connect(t.Context(), opt.opt)
		require.ErrorContains(t, err, opt.name)
	}
	_, err := ConnectHTTP(t.Context(), "http://127.0.0.1:1/mcp", WithShutdownGrace(0), WithTimeout(time.Second), WithProbeTimeout(time.Second))
	require.Error(t, err) // nothing listens there: the options themselves were accepted
	require.NotContains(t, err.Error(), "applies to")
}
