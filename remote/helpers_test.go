package remote

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/listening"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m, removeSnodoBuild) }

// natsServer starts an embedded NATS server for one test.
func natsServer(t *testing.T) *natsembed.Server {
	t.Helper()
	e, err := natsembed.Start(natsembed.Options{})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	return e
}

// conn connects to e, closed at the end of the test.
func conn(t *testing.T, e *natsembed.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(e.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// host serves a pool of the test server (with flags) under name, in this
// process.
func host(t *testing.T, e *natsembed.Server, name string, size int, flags ...string) *Host {
	t.Helper()
	return hostWith(t, e, name, size, nil, flags...)
}

// hostWith is host with connection options for the pool's members.
func hostWith(t *testing.T, e *natsembed.Server, name string, size int, conn []snodo.Option, flags ...string) *Host {
	t.Helper()
	cmd, args := testutil.Server(t, flags...)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), size, supervisor.WithConnectOptions(conn...))
	require.NoError(t, err)
	h, err := NewHost(context.Background(), e.URL(), Serve(name, p))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// client calls name through e.
func client(t *testing.T, e *natsembed.Server, name string, opts ...ClientOption) *Client {
	t.Helper()
	c, err := NewClient(conn(t, e), name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// hostedOf is what serves a remote subscription, for the tests that look
// at its host and its measurements.
func hostedOf(sub *snodo.Subscription) *hosted {
	return listening.ImplOf((*listening.Sub)(sub)).(*hosted)
}
