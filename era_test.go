package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

var testCaps = ClientCapabilities{Elicitation: &ElicitationCapability{Form: true}, Roots: &ListChangedCapability{ListChanged: true}}

func TestConnectModernProbeCarriesFullMeta(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"}, WithClientInfo("agent", "1.2.3"), WithClientCapabilities(testCaps))
	assert.Equal(t, EraModern, c.Era())
	assert.Equal(t, "modern", string(c.Era()))
	assert.Equal(t, "2026-07-28", c.ProtocolVersion())
	assert.Equal(t, "snodo-testserver", c.ServerInfo().Name)
	assert.Equal(t, "test server", c.Instructions())
	require.NotNil(t, c.Capabilities().Tools)
	assert.True(t, c.Capabilities().Tools.ListChanged)
	assert.False(t, c.legacy())

	probes := seen(t, c, "server/discover")
	require.Len(t, probes, 1)
	meta := metaOf(t, probes[0].Params)
	assert.JSONEq(t, `"2026-07-28"`, string(meta[metaProtocolVersion]))
	assert.JSONEq(t, `{"name":"agent","version":"1.2.3"}`, string(meta[metaClientInfo]))
	assert.JSONEq(t, `{"elicitation":{"form":{}},"roots":{"listChanged":true}}`, string(meta[metaClientCapabilities]))
	assert.Empty(t, seen(t, c, "initialize"), "a modern server must not be initialized")
}

func TestConnectPrefersModernOnDualEraServer(t *testing.T) {
	c := dialTest(t, []string{"-era", "both"})
	assert.Equal(t, EraModern, c.Era())
	assert.JSONEq(t, `{"name":"snodo","version":"0.1.0"}`, string(c.requestMeta()[metaClientInfo]))
}

func TestConnectFallsBackToInitialize(t *testing.T) {
	c := dialTest(t, []string{"-era", "legacy"}, WithClientInfo("agent", "1.2.3"), WithClientCapabilities(testCaps))
	assert.Equal(t, EraLegacy, c.Era())
	assert.True(t, c.legacy())
	assert.Equal(t, "2025-11-25", c.ProtocolVersion())
	assert.Equal(t, "snodo-testserver", c.ServerInfo().Name)
	assert.NotNil(t, c.Capabilities().Logging)
	assert.Nil(t, c.requestMeta())

	inits := seen(t, c, "initialize")
	require.Len(t, inits, 1)
	assert.JSONEq(t, `{"protocolVersion":"2025-11-25",
		"capabilities":{"elicitation":{"form":{}},"roots":{"listChanged":true}},
		"clientInfo":{"name":"agent","version":"1.2.3"}}`, string(inits[0].Params))
	raw, err := c.Request(t.Context(), "test/received", map[string]string{"method": "notifications/initialized"})
	require.NoError(t, err)
	assert.Contains(t, string(raw), "notifications/initialized")
}

func TestConnectSilentProbeTimesOutToLegacy(t *testing.T) {
	start := time.Now()
	c := dialTest(t, []string{"-silent-discover"}, WithProbeTimeout(300*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, EraLegacy, c.Era())
	assert.Equal(t, "2025-11-25", c.ProtocolVersion())
}

func TestConnectRestartsServerThatExitsOnProbe(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	c := dialTest(t, []string{"-exit-on-discover", "-state-file", state})
	assert.FileExists(t, state, "the first process saw the probe")
	assert.True(t, c.mcp.restarted)
	assert.Equal(t, EraLegacy, c.Era())
	assert.Empty(t, seen(t, c, "server/discover"), "the restarted server is not probed again")
	res, err := c.CallTool(t.Context(), "echo", map[string]string{"message": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Text())
}

func TestConnectUnsupportedVersionIsModernNotLegacy(t *testing.T) {
	cmd, args := testutil.Server(t, "-discover-version", "2099-01-01")
	_, err := Connect(t.Context(), cmd, args)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2099-01-01")
	assert.Contains(t, err.Error(), "upgrade")
}

func TestConnectRetriesWithVersionFromSupportedList(t *testing.T) {
	saved := modernVersions
	modernVersions = []string{"2031-01-01", "2026-07-28"}
	t.Cleanup(func() { modernVersions = saved })
	c := dialTest(t, nil)
	assert.Equal(t, EraModern, c.Era())
	assert.Equal(t, "2026-07-28", c.ProtocolVersion())
	probes := seen(t, c, "server/discover")
	require.Len(t, probes, 2)
	assert.JSONEq(t, `"2031-01-01"`, string(metaOf(t, probes[0].Params)[metaProtocolVersion]))
	assert.JSONEq(t, `"2026-07-28"`, string(metaOf(t, probes[1].Params)[metaProtocolVersion]))
	assert.JSONEq(t, `"2026-07-28"`, string(c.requestMeta()[metaProtocolVersion]))
}

func TestModernRequestsCarryMetaAndKeepCallerMeta(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"})
	raw, err := c.Request(t.Context(), "test/echo", json.RawMessage(`{"x":1,"_meta":{"progressToken":"mine","com.example/k":true}}`))
	require.NoError(t, err)
	meta := metaOf(t, raw)
	assert.JSONEq(t, `"mine"`, string(meta["progressToken"]))
	assert.JSONEq(t, `true`, string(meta["com.example/k"]))
	assert.JSONEq(t, `"2026-07-28"`, string(meta[metaProtocolVersion]))
	assert.Contains(t, meta, metaClientInfo)
	assert.Contains(t, meta, metaClientCapabilities)
	assert.NotContains(t, meta, metaLogLevel)

	var progress int
	_, err = c.CallTool(t.Context(), "slow", map[string]int{"ms": 40}, OnProgress(func(Progress) { progress++ }))
	require.NoError(t, err)
	assert.Positive(t, progress)
	calls := seen(t, c, "tools/call")
	meta = metaOf(t, calls[len(calls)-1].Params)
	assert.Contains(t, meta, "progressToken")
	assert.Contains(t, meta, metaProtocolVersion)
}

func TestSetLoggingLevelByEra(t *testing.T) {
	modern := dialTest(t, []string{"-era", "modern"})
	require.NoError(t, modern.SetLoggingLevel(t.Context(), "warning"))
	raw, err := modern.Request(t.Context(), "test/echo", nil)
	require.NoError(t, err)
	assert.JSONEq(t, `"warning"`, string(metaOf(t, raw)[metaLogLevel]))
	assert.Empty(t, seen(t, modern, "logging/setLevel"), "modern servers have no logging/setLevel")

	legacy := dialTest(t, []string{"-era", "legacy"})
	require.NoError(t, legacy.SetLoggingLevel(t.Context(), "debug"))
	sets := seen(t, legacy, "logging/setLevel")
	require.Len(t, sets, 1)
	assert.JSONEq(t, `{"level":"debug"}`, string(sets[0].Params))

	assert.Error(t, legacy.SetLoggingLevel(t.Context(), "loud"))
}

func TestPingByEra(t *testing.T) {
	modern := dialTest(t, []string{"-era", "modern"})
	require.NoError(t, modern.Ping(t.Context()))
	assert.Len(t, seen(t, modern, "server/discover"), 2, "probe plus ping")
	assert.Empty(t, seen(t, modern, "ping"))
	_, err := modern.Request(t.Context(), "ping", nil)
	var e *Error
	require.ErrorAs(t, err, &e, "modern servers answer ping with -32601")
	assert.Equal(t, CodeMethodNotFound, e.Code)

	legacy := dialTest(t, []string{"-era", "legacy"})
	require.NoError(t, legacy.Ping(t.Context()))
	assert.Len(t, seen(t, legacy, "ping"), 1)
}

// The fallback must not be keyed to one error code: each of these probe
// answers leads to initialize, and the version the server picks is kept.
func TestFallbackOnAnyNonModernError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flags   []string
		version string
	}{
		{"-32601", nil, "2025-11-25"}, // the legacy era's own answer
		{"-32602", []string{"-discover-error", "-32602"}, "2025-06-18"},
		{"-32600", []string{"-discover-error", "-32600"}, "2025-03-26"},
		{"4242", []string{"-discover-error", "4242"}, "2024-11-05"},
		{"not-a-DiscoverResult", []string{"-discover-junk"}, "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialTest(t, append(tc.flags, "-era", "legacy", "-initialize-version", tc.version))
			assert.Equal(t, EraLegacy, c.Era())
			assert.Equal(t, tc.version, c.ProtocolVersion())
		})
	}
}

func TestConnectRejectsUnknownLegacyVersion(t *testing.T) {
	cmd, args := testutil.Server(t, "-era", "legacy", "-initialize-version", "2023-01-01")
	_, err := Connect(t.Context(), cmd, args)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2023-01-01")
}

func TestConnectFailsWhenOwnerIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cmd, args := testutil.Server(t)
	_, err := Connect(ctx, cmd, args)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled))
}

func TestWithEraSkipsDetection(t *testing.T) {
	c := dialTest(t, []string{"-era", "both"}, WithEra(EraLegacy))
	assert.Equal(t, EraLegacy, c.Era())
	assert.Empty(t, seen(t, c, "server/discover"), "WithEra(EraLegacy) never probes")

	cmd, args := testutil.Server(t, "-era", "legacy")
	_, err := Connect(t.Context(), cmd, args, WithEra(EraModern))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a modern MCP server")

	for _, e := range []Era{"", "Modern", "future"} {
		_, err = Connect(t.Context(), cmd, args, WithEra(e))
		assert.ErrorContains(t, err, "unknown era", "%q", e)
	}
}

// A modern-only server too slow for the probe (an npx download, say)
// then refuses initialize: the error says the probe got no answer in
// time and names WithProbeTimeout, not only that initialize failed.
func TestConnectSlowModernServerNamesTheProbeTimeout(t *testing.T) {
	command, args := testutil.Server(t, "-era", "modern", "-silent-discover")
	_, err := Connect(t.Context(), command, args, WithProbeTimeout(200*time.Millisecond))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server/discover got no answer within 200ms")
	assert.Contains(t, err.Error(), "WithProbeTimeout")
	var e *Error
	require.ErrorAs(t, err, &e, "the initialize error is still wrapped")
	assert.Equal(t, CodeMethodNotFound, e.Code)
}
