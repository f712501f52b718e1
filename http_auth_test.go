package snodo

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/httpserver"
	"github.com/snodo/snodo/test/oauthserver"
	"github.com/snodo/snodo/test/testutil"
)

// TestHTTPOAuthAgainstAProtectedServer puts snodo's HTTP test server
// behind the test authorization server's protected resource: ConnectHTTP
// authorizes on the first 401 (discovery, registration, the user's step,
// the token), and a second connection made with the same option (a
// supervised client's new session) refreshes the token without asking
// the user again.
func TestHTTPOAuthAgainstAProtectedServer(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true })
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "modern"} })

	var asked atomic.Int32
	auth := WithOAuth(OAuth{Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
		asked.Add(1)
		return oauthserver.Consent(ctx, authURL)
	}})
	connect := func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		c, err := ConnectHTTP(ctx, rs.URL(), auth)
		require.NoError(t, err)
		defer c.Close()
		tools, err := c.ListTools(ctx)
		require.NoError(t, err)
		assert.NotEmpty(t, tools)
	}
	connect()
	assert.Equal(t, int32(1), asked.Load())
	auths, tokens, regs := as.Counts()
	assert.Equal(t, []int{1, 1, 1}, []int{auths, tokens, regs})

	as.Revoke()
	connect()
	assert.Equal(t, int32(1), asked.Load(), "the refresh token works: the user is not asked again")
	_, tokens, _ = as.Counts()
	assert.Equal(t, 2, tokens)
	assert.Equal(t, "refresh_token", as.TokenForms[1].Get("grant_type"))
}

// TestOAuthTokensReachNoSpanOrLog: with tracing, metrics and a debug log
// on, and the wire trace taken, the access token, the refresh token and
// the authorization code the connection used appear in no span (its
// name, attributes, events or status), no log record and no wire line.
func TestOAuthTokensReachNoSpanOrLog(t *testing.T) {
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true })
	rs := oauthserver.NewResource(t, as, func(r *oauthserver.Resource) { r.Handler = &httpserver.HTTP{Era: "legacy"} })
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	var logs testutil.Buffer
	var wire testutil.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := ConnectHTTP(ctx, rs.URL(),
		WithOAuth(OAuth{Authorize: oauthserver.Consent}),
		WithTracerProvider(tp),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		WithWireTrace(func(d connection.Direction, line []byte) { wire.Write(line) }))
	require.NoError(t, err)
	_, err = c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	<-c.Done()
	require.NoError(t, tp.Shutdown(context.Background()))

	var secrets []string
	for _, h := range rs.RequestHeaders() {
		if tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
			secrets = append(secrets, tok)
		}
	}
	for _, f := range as.TokenForms {
		secrets = append(secrets, f.Get("code"), f.Get("code_verifier"), f.Get("refresh_token"))
	}
	require.NotEmpty(t, secrets, "the server saw a token")
	var seen strings.Builder
	for _, s := range spans.Ended() {
		fmt.Fprintf(&seen, "%s %v %v %v\n", s.Name(), s.Attributes(), s.Events(), s.Status())
	}
	require.NotZero(t, seen.Len(), "spans were recorded")
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		assert.NotContains(t, seen.String(), secret, "a span")
		assert.NotContains(t, logs.String(), secret, "a log record")
		assert.NotContains(t, wire.String(), secret, "the wire trace")
	}
}
