package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo/internal/natsurl"
)

// ConnectNATS is nats.Connect bounded by ctx, for a connection to give
// NewClient or Discover: when ctx is done before the connection is made,
// it returns ctx's error (errors.Is context.Canceled or
// DeadlineExceeded) at once, and a connection that completes later is
// closed. ctx bounds the connecting only, as Dial's does.
func ConnectNATS(ctx context.Context, url string, opts ...nats.Option) (*nats.Conn, error) {
	if ctx == nil {
		return nil, errors.New("remote: ConnectNATS: nil context.Context; pass context.Background() or a ctx that bounds the connecting")
	}
	return connectNATS(ctx, url, opts)
}

// connectNATS is nats.Connect bounded by ctx, which nats.go's Connect
// does not take. The dials of the first connect are made with ctx, and
// a connection still in its handshake when ctx is done is closed, so
// nats.Connect returns soon after; connectNATS itself returns at once,
// with ctx's error, and a connection that completes afterwards is
// closed, never handed over. Dials after the first connect (nats.go's
// reconnects) do not use ctx: it bounds connecting, not the
// connection's life. nats.Timeout is left as the caller set it, since it
// bounds every later reconnect too. The host-name lookup nats.go makes
// takes no ctx: connectNATS returns without waiting for it.
func connectNATS(ctx context.Context, url string, opts []nats.Option) (*nats.Conn, error) {
	fail := func(err error) error {
		// It failed as ctx ended: say so, with the cause. A dial cut short
		// by ctx ("operation was canceled") matches context.Canceled but
		// not a cause set with WithCancelCause, so ask for the cause.
		if ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
			err = fmt.Errorf("%w: %w", ctxErr(ctx), err)
		}
		return fmt.Errorf("remote: connecting to NATS at %s: %w", natsurl.Redact(url), err)
	}
	if ctx.Err() != nil {
		return nil, fail(ctxErr(ctx))
	}
	d := &connectDialer{ctx: ctx}
	opts = append(opts[:len(opts):len(opts)], d.install)
	type result struct {
		nc  *nats.Conn
		err error
	}
	var (
		mu        sync.Mutex
		abandoned bool
	)
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(url, opts...)
		d.end()
		mu.Lock()
		defer mu.Unlock()
		if abandoned || (err == nil && ctx.Err() != nil) {
			if nc != nil {
				nc.Close()
			}
			if abandoned {
				return
			}
			nc, err = nil, ctxErr(ctx)
		}
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fail(r.err)
		}
		return r.nc, nil
	case <-ctx.Done():
		mu.Lock()
		abandoned = true
		mu.Unlock()
		select {
		case r := <-done: // it ended as ctx did: take its outcome
			if r.err != nil {
				return nil, fail(r.err)
			}
			return r.nc, nil
		default:
		}
		return nil, fail(ctxErr(ctx))
	}
}

// ctxErr is ctx's error, with its cause when that says more, for
// errors.Is on either.
func ctxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// connectDialer makes the dials of one nats.Connect: those of the first
// connect with its ctx, the later ones (reconnects) without. It dials
// with the caller's nats.SetCustomDialer, if any, else as nats.go would.
type connectDialer struct {
	ctx  context.Context
	base nats.CustomDialer // the caller's dialer, or nil
	nd   net.Dialer        // when base is nil

	mu    sync.Mutex
	over  bool          // the first connect is over
	stops []func() bool // context.AfterFunc stops closing the first connect's conns
}

// install is the last nats.Option: it wraps whatever dialer the options
// before it chose.
func (d *connectDialer) install(o *nats.Options) error {
	d.base = o.CustomDialer
	if o.Dialer != nil {
		d.nd = *o.Dialer
	} else {
		d.nd = net.Dialer{Timeout: o.Timeout}
	}
	if o.AllowMultipathTCP != nil {
		d.nd.SetMultipathTCP(*o.AllowMultipathTCP)
	}
	o.CustomDialer = d
	return nil
}

// Dial implements nats.CustomDialer.
func (d *connectDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	over := d.over
	d.mu.Unlock()
	if over {
		return d.dial(context.Background(), network, address)
	}
	conn, err := d.dial(d.ctx, network, address)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.over {
		d.stops = append(d.stops, context.AfterFunc(d.ctx, func() { _ = conn.Close() }))
	}
	return conn, nil
}

func (d *connectDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	if d.base == nil {
		return d.nd.DialContext(ctx, network, address)
	}
	if cd, ok := d.base.(interface {
		DialContext(context.Context, string, string) (net.Conn, error)
	}); ok {
		return cd.DialContext(ctx, network, address)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.base.Dial(network, address)
}

// SkipTLSHandshake passes on the caller's dialer's choice (nats.go asks
// a CustomDialer).
func (d *connectDialer) SkipTLSHandshake() bool {
	s, ok := d.base.(interface{ SkipTLSHandshake() bool })
	return ok && s.SkipTLSHandshake()
}

// end marks the first connect over: later dials ignore ctx, and the
// conns it dialed are no longer closed when ctx is done.
func (d *connectDialer) end() {
	d.mu.Lock()
	d.over = true
	stops := d.stops
	d.stops = nil
	d.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
