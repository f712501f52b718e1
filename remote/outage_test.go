package remote

import (
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// restartable is an embedded NATS server that can be stopped and started
// again on the same port, as a NATS server that goes away for a while.
type restartable struct {
	t    *testing.T
	port int
	opts natsembed.Options
	e    *natsembed.Server
}

func startRestartable(t *testing.T, o natsembed.Options) *restartable {
	t.Helper()
	e, err := natsembed.Start(o)
	require.NoError(t, err)
	u, err := url.Parse(e.URL())
	require.NoError(t, err)
	o.Port, err = strconv.Atoi(u.Port())
	require.NoError(t, err)
	r := &restartable{t: t, port: o.Port, opts: o, e: e}
	t.Cleanup(func() {
		if r.e != nil {
			r.e.Shutdown()
		}
	})
	return r
}

func (r *restartable) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(r.port) }

func (r *restartable) stop() { r.e.Shutdown(); r.e = nil }

// start starts it again, with o's token when o has one.
func (r *restartable) start(token string) {
	r.t.Helper()
	o := r.opts
	o.Token = token
	e, err := natsembed.Start(o)
	require.NoError(r.t, err)
	r.e = e
}

// shortReconnect makes a long outage short: with nats.go's default of 60
// attempts, 20 ms apart, the connection would close for good after about
// 1.5 s of an outage.
var shortReconnect = Reconnect{Wait: 10 * time.Millisecond, MaxWait: 20 * time.Millisecond}

func TestHostAndClientReconnectForEver(t *testing.T) {
	ns := startRestartable(t, natsembed.Options{})
	var logs testutil.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	journalFile := filepath.Join(t.TempDir(), "journal")
	cmd, args := testutil.Server(t, "-journal", journalFile)
	p, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := NewHost(bg(), ns.URL(), Serve("ts", p), WithReconnect(shortReconnect), WithLogger(logger))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	c, err := Dial(bg(), ns.URL(), "ts", WithReconnect(shortReconnect), WithConnectOptions(snodo.WithLogger(logger)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
	require.NoError(t, err)
	succeeded := 1

	ns.stop()
	testutil.Eventually(t, func() bool { return !c.nc.IsConnected() }, 10*time.Second, "the caller sees NATS gone")
	// Well past the 60 attempts of nats.go's default.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		// A call made meanwhile fails at once, having sent nothing.
		t0 := time.Now()
		_, err := c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
		require.ErrorIs(t, err, nats.ErrConnectionReconnecting)
		require.ErrorIs(t, err, snodo.ErrConnectionClosed)
		assert.Contains(t, err.Error(), "NATS unreachable (reconnecting)")
		assert.Less(t, time.Since(t0), time.Second)
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, h.Err())
	ns.start("")

	testutil.Eventually(t, func() bool {
		_, err := c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
		if err == nil {
			succeeded++
		}
		return err == nil
	}, 20*time.Second, "the host and the caller serve again after the outage")
	// No call reported failed reached the server later: it got the
	// calls that succeeded, and those only (a call sent as the caller's
	// connection dropped may be lost, never run late).
	time.Sleep(500 * time.Millisecond)
	assert.LessOrEqual(t, count(journal(t, journalFile), "request", "test/echo"), succeeded)
	require.NoError(t, h.Err())
	select {
	case <-h.Done():
		t.Fatal("the host stopped")
	default:
	}
	out := logs.String()
	assert.Contains(t, out, "NATS connection lost; reconnecting")
	assert.Contains(t, out, "NATS connection back")
	assert.NotContains(t, out, "closed for good")
}

func TestBoundedReconnectStopsTheHostWithAnError(t *testing.T) {
	ns := startRestartable(t, natsembed.Options{})
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := NewHost(bg(), ns.URL(), Serve("ts", p),
		WithReconnect(Reconnect{Attempts: 3, Wait: 10 * time.Millisecond, MaxWait: 10 * time.Millisecond}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	ns.stop()
	select {
	case <-h.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not stop once its connection closed for good")
	}
	require.ErrorIs(t, h.Err(), nats.ErrConnectionClosed)
	assert.Contains(t, h.Err().Error(), "start it again")
	<-p.Done() // its pool was closed and reaped
}

// A node whose NATS connection closes for good (here: the restarted NATS
// server refuses its token) exits non-zero, saying so, rather than live on
// serving nothing.
func TestNodeExitsWhenItsConnectionClosesForGood(t *testing.T) {
	ns := startRestartable(t, natsembed.Options{Token: "first"})
	n := startNodeEnv(t, []string{"SNODO_NATS_TOKEN=first"}, ns.URL(), writeConfig(t, "ts"))
	ns.stop()
	ns.start("second")
	select {
	case <-n.waited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the node lives on with its connection closed; stderr:\n%s", n.stderr.String())
	}
	require.Error(t, n.exitErr)
	assert.Contains(t, n.stderr.String(), "closed for good")
}

// A caller with a bound on its reconnects gets an error it can act on
// once its connection closed for good.
func TestBoundedReconnectFailsTheCallerWithAnError(t *testing.T) {
	ns := startRestartable(t, natsembed.Options{})
	host(t, ns.e, "ts", 1)
	c, err := Dial(bg(), ns.URL(), "ts", WithReconnect(Reconnect{Attempts: 2, Wait: 10 * time.Millisecond, MaxWait: 10 * time.Millisecond}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
	require.NoError(t, err)
	ns.stop()
	testutil.Eventually(t, c.nc.IsClosed, 30*time.Second, "the caller's connection closes for good")
	_, err = c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
	require.ErrorIs(t, err, nats.ErrConnectionClosed)
	require.ErrorIs(t, err, snodo.ErrConnectionClosed)
}
