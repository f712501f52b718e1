package remote

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// within receives from ch, failing t after 10 s.
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, "nothing came within 10 s")
		panic("unreachable")
	}
}

// spyCalls subscribes to the calls c sends (beside the hosts' queue
// group, so that it sees every one).
func spyCalls(t *testing.T, nc *nats.Conn, c *Client) chan *nats.Msg {
	t.Helper()
	calls := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(c.subj.call, calls)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, nc.Flush())
	return calls
}

// TestCallSettingsTravelInThePayload: once every host of the name has
// said it reads a call's settings in its payload, a call goes with no
// header at all, and the host runs it with those settings (progress).
func TestCallSettingsTravelInThePayload(t *testing.T) {
	e := natsServer(t)
	host(t, e, "echo", 1)
	c := client(t, e, "echo")
	calls := spyCalls(t, conn(t, e), c)
	ctx := t.Context() // no deadline: the calls' settings are the client's (a 60 s timeout)

	_, err := c.Request(ctx, "test/echo", nil) // learns the era, and asks the hosts
	require.NoError(t, err)
	first := within(t, calls)
	assert.NotEmpty(t, first.Header.Get(hdrOpts), "before the hosts answered, the settings travel in the header")
	c.probes.Wait() // the hosts' answers are in
	require.True(t, c.envOpts.Load())

	var got []snodo.Progress
	raw, err := c.Request(ctx, "test/progress", map[string]any{"count": 3, "intervalMs": 10},
		snodo.OnProgress(func(p snodo.Progress) { got = append(got, p) }))
	require.NoError(t, err)
	assert.Len(t, got, 3, "the host read progress from the payload's settings")
	assert.True(t, json.Valid(raw))
	m := within(t, calls)
	assert.Empty(t, m.Header)
	settings, ok := envOptsOf(m.Data)
	require.True(t, ok, "%s", m.Data)
	assert.Equal(t, "beat=500 timeout=60000 alive progress", string(settings))

	raw, err = c.Request(ctx, "test/echo", map[string]any{"a": 1})
	require.NoError(t, err)
	var echoed struct{ A int }
	require.NoError(t, json.Unmarshal(raw, &echoed))
	assert.Equal(t, 1, echoed.A)
}

// TestCallSettingsStayInTheHeaderBesideAnOlderHost: a host that does not
// say it reads them (one of an earlier version) keeps every call's
// settings in the header.
func TestCallSettingsStayInTheHeaderBesideAnOlderHost(t *testing.T) {
	e := natsServer(t)
	host(t, e, "echo", 1)
	c := client(t, e, "echo")
	older := conn(t, e)
	asked := make(chan struct{}, 8)
	_, err := older.Subscribe(c.subj.hosts, func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"id":"older","free":1}`))
		select {
		case asked <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	require.NoError(t, older.Flush())
	calls := spyCalls(t, conn(t, e), c)
	ctx := t.Context() // no deadline: the calls' settings are the client's (a 60 s timeout)

	_, err = c.Request(ctx, "test/echo", nil)
	require.NoError(t, err)
	within(t, asked)
	c.probes.Wait()
	require.False(t, c.envOpts.Load())
	for range 3 {
		_, err = c.Request(ctx, "test/echo", nil)
		require.NoError(t, err)
	}
	for range 4 {
		m := within(t, calls)
		assert.Contains(t, m.Header.Get(hdrOpts), "beat=500 timeout=60000 alive")
		assert.False(t, bytes.HasPrefix(m.Data, []byte(envOptsPrefix)))
	}
}

// TestSettingsInThePayload: the request so written is one JSON-RPC
// request, the same one with a member more; a host reads the settings
// from it as from the header, and only in the characters appendOpts
// writes.
func TestSettingsInThePayload(t *testing.T) {
	b := appendEnvRequest(nil, "beat=500 timeout=60000 alive era", 7, "tools/call", []byte(`{"name":"x"}`))
	env, err := jsonrpc.Scan(b)
	require.NoError(t, err)
	assert.Equal(t, jsonrpc.KindRequest, env.Kind)
	assert.Equal(t, "7", string(env.ID))
	assert.Equal(t, `{"name":"x"}`, string(env.Params))
	assert.Equal(t, `"tools/call"`, string(env.Method))
	var s served
	got, ro := s.optsOf(nil, b)
	want := callOpts{beat: 500 * time.Millisecond, timeout: time.Minute, alive: true, era: true}
	assert.Equal(t, want, got)
	assert.Len(t, ro, 1)      // the timeout, plus its grace
	got, _ = s.optsOf(nil, b) // kept: read once
	assert.Equal(t, want, got)
	fromHeader, _ := s.optsOf(nats.Header{hdrOpts: {"beat=500 timeout=60000 alive era"}}, nil)
	assert.Equal(t, want, fromHeader)

	for _, bad := range []string{`{"_snodo":"beat=500\"x","id":1}`, `{"_snodo":"Beat=1","id":1}`, `{"_snodo":"beat=1`, `{"jsonrpc":"2.0","_snodo":"alive"}`} {
		_, ok := envOptsOf([]byte(bad))
		assert.False(t, ok, bad)
	}
	assert.False(t, plainOpts("log=debug\n"))
	assert.True(t, plainOpts("log=debug legacy"))
	// A header wins over the payload (an earlier caller never writes both).
	got, _ = s.optsOf(nats.Header{hdrOpts: {"beat=100"}}, b)
	assert.Equal(t, callOpts{beat: 100 * time.Millisecond}, got)
}
