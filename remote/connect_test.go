package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// silentNATS is a listener that accepts connections and never says
// anything: a NATS client waits for the server's INFO until its
// nats.Timeout. Each accepted connection is sent on the returned channel.
func silentNATS(t *testing.T) (url string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ch := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case ch <- c:
			default:
				_ = c.Close()
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for {
			select {
			case c := <-ch:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return "nats://" + ln.Addr().String(), ch
}

// closedByPeer reports whether c's peer has closed it (within a bound).
func closedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := c.Read(make([]byte, 64))
	require.ErrorIs(t, err, io.EOF, "the connection the caller gave up on is closed")
	_ = c.Close()
}

// A cancelled ctx ends Dial while NATS has not answered (nats.Timeout is
// a minute here): Dial returns its error at once, and the connection it
// had opened is closed, not left to finish.
func TestDialCancelledWhileConnecting(t *testing.T) {
	url, accepted := silentNATS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		c   *Client
		err error
	}
	res := make(chan result, 1)
	start := time.Now()
	go func() {
		c, err := Dial(ctx, url, "x", WithNATSOptions(nats.Timeout(time.Minute)))
		res <- result{c, err}
	}()
	conn := testutil.Receive(t, accepted, 10*time.Second, "the dial's connection")
	cancel()
	r := testutil.Receive(t, res, 10*time.Second, "Dial's return after its ctx was cancelled")
	require.Nil(t, r.c)
	require.ErrorIs(t, r.err, context.Canceled)
	require.ErrorContains(t, r.err, "connecting to NATS at "+url)
	closedByPeer(t, conn)
	t.Logf("Dial returned %v after it started (ctx cancelled once connected)", time.Since(start).Round(time.Millisecond))
}

// A ctx's deadline bounds Dial as its cancellation does.
func TestDialDeadlineWhileConnecting(t *testing.T) {
	url, accepted := silentNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := make(chan error, 1)
	start := time.Now()
	go func() {
		c, err := Dial(ctx, url, "x", WithNATSOptions(nats.Timeout(time.Minute)))
		if c != nil {
			_ = c.Close()
		}
		res <- err
	}()
	conn := testutil.Receive(t, accepted, 10*time.Second, "the dial's connection")
	err := testutil.Receive(t, res, 10*time.Second, "Dial's return at its ctx's deadline")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	closedByPeer(t, conn)
	t.Logf("Dial with a 300 ms ctx returned after %v", time.Since(start).Round(time.Millisecond))
}

// A ctx done before Dial connects nothing; a nil ctx is refused; a ctx
// that ends after Dial has connected leaves the client working (it bounds
// the connecting only), with the caller's own dialer still used.
func TestDialCtx(t *testing.T) {
	e := natsServer(t)
	host(t, e, "x", 1)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Dial(done, e.URL(), "x")
	require.ErrorIs(t, err, context.Canceled)
	var nilCtx context.Context
	_, err = Dial(nilCtx, e.URL(), "x")
	require.ErrorContains(t, err, "nil context.Context")
	_, err = Dial(context.Background(), e.URL(), "bad.name")
	require.ErrorContains(t, err, "letters, digits")

	ctx, cancel := context.WithCancel(context.Background())
	var dials atomic.Int32
	c, err := Dial(ctx, e.URL(), "x", WithNATSOptions(nats.SetCustomDialer(countingDialer{&dials})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.EqualValues(t, 1, dials.Load(), "the caller's dialer makes the connection")
	cancel()
	res, err := c.CallTool(ctxFor(t, 20*time.Second), "echo", map[string]any{"message": "still here"})
	require.NoError(t, err, "Dial's ctx ended after it connected: the client keeps its connection")
	require.Equal(t, "still here", res.Text())
}

// countingDialer is a nats.CustomDialer without DialContext.
type countingDialer struct{ n *atomic.Int32 }

func (d countingDialer) Dial(network, address string) (net.Conn, error) {
	d.n.Add(1)
	return net.Dial(network, address)
}

// NewHost's ctx bounds its connecting as Dial's does: cancelled while NATS
// has not answered, NewHost returns its error, closes the connection it
// had opened and the pools it was given.
func TestNewHostCancelledWhileConnecting(t *testing.T) {
	url, accepted := silentNATS(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	why := errors.New("the operator gave up")
	res := make(chan error, 1)
	go func() {
		h, err := NewHost(ctx, url, Serve("x", p), WithNATSOptions(nats.Timeout(time.Minute)))
		if h != nil {
			_ = h.Close()
		}
		res <- err
	}()
	conn := testutil.Receive(t, accepted, 10*time.Second, "the host's connection")
	cancel(why)
	err = testutil.Receive(t, res, 10*time.Second, "NewHost's return after its ctx was cancelled")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, why, "the cause is kept")
	closedByPeer(t, conn)
	testutil.Receive(t, p.Done(), 10*time.Second, "the pool's end")
}

// ConnectNATS, for NewClient and Discover, is bounded by its ctx as Dial
// is, and refuses a nil one.
func TestConnectNATS(t *testing.T) {
	url, accepted := silentNATS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() {
		nc, err := ConnectNATS(ctx, url, nats.Timeout(time.Minute))
		if nc != nil {
			nc.Close()
		}
		res <- err
	}()
	conn := testutil.Receive(t, accepted, 10*time.Second, "the connection")
	cancel()
	require.ErrorIs(t, testutil.Receive(t, res, 10*time.Second, "ConnectNATS's return"), context.Canceled)
	closedByPeer(t, conn)

	var nilCtx context.Context
	_, err := ConnectNATS(nilCtx, url)
	require.ErrorContains(t, err, "nil context.Context")
	e := natsServer(t)
	nc, err := ConnectNATS(context.Background(), e.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c, err := NewClient(nc, "x")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
}
