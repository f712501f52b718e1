package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo/internal/natsurl"
)

// ConnectNATS is nats.Connect bounded by ctx, for a connection to give
// NewClient or Discover: when ctx is done before the connection is made,
// it returns ctx's error (errors.Is context.Canceled or
// DeadlineExceeded) at once, and a connection that completes later is
// closed. ctx bounds the connecting only, as Dial's does. The
// connection reconnects as a caller's of this package does (for ever,
// pausing 100 ms, then twice as long each time up to 5 s, nothing
// buffered meanwhile: see Reconnect); opts may say otherwise.
func ConnectNATS(ctx context.Context, url string, opts ...nats.Option) (*nats.Conn, error) {
	if ctx == nil {
		return nil, errors.New("remote: ConnectNATS: nil context.Context; pass context.Background() or a ctx that bounds the connecting")
	}
	return connectNATS(ctx, url, append([]nats.Option{defaultReconnect.option(), nats.ReconnectBufSize(-1)}, opts...))
}

// Reconnect is how a NATS connection this package opens (a Host's two,
// Dial's, ConnectNATS's) comes back after its NATS server goes away:
// attempts with a back-off that doubles from Wait up to MaxWait, each
// pause jittered by up to half of it, so that hosts cut off together do
// not come back together. nats.go's own default gives up after 60
// attempts 2 s apart, leaving a host that looks alive but serves
// nothing; this package's default never gives up. Set it with
// WithReconnect; nats options given with WithNATSOptions
// (nats.MaxReconnects, nats.ReconnectWait, nats.CustomReconnectDelay)
// apply when WithReconnect is not given.
type Reconnect struct {
	// Attempts bounds the attempts in a row to each server of the URL
	// list; 0 tries for ever. Once they are spent the connection is
	// closed for good: a Host stops (Host.Err says why, errors.Is
	// nats.ErrConnectionClosed) and a Client's calls fail with -32000
	// wrapping nats.ErrConnectionClosed.
	Attempts int
	// Wait is the first pause between two rounds of attempts; 0 means
	// 100 ms.
	Wait time.Duration
	// MaxWait caps the pause; 0 means 5 s (or Wait, if longer).
	MaxWait time.Duration
}

// defaultReconnect is the reconnect policy of the NATS connections this
// package opens: for ever, pausing 100 ms, then twice as long each
// time, up to 5 s.
var defaultReconnect = Reconnect{Attempts: 0, Wait: 100 * time.Millisecond, MaxWait: 5 * time.Second}

// option is r as a nats.Option.
func (r Reconnect) option() nats.Option {
	wait, maxWait := r.Wait, r.MaxWait
	if wait <= 0 {
		wait = defaultReconnect.Wait
	}
	if maxWait <= 0 {
		maxWait = max(defaultReconnect.MaxWait, wait)
	}
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = -1
	}
	return func(o *nats.Options) error {
		o.MaxReconnect = attempts
		o.CustomReconnectDelayCB = func(n int) time.Duration { return backoff(n, wait, maxWait) }
		return nil
	}
}

// backoff is the pause before the nth try (n from 1): wait doubled n-1
// times, at most maxWait, less a random part of up to half of it (full
// pauses in step would bring peers back together).
func backoff(n int, wait, maxWait time.Duration) time.Duration {
	d := wait
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	return d - rand.N(d/2+1)
}

// watchConn logs each change of nc's state, one line each (what names
// the connection), until nc closes or the returned stop is called.
// lost, when not nil, runs once if nc closes for good without stop.
func watchConn(nc *nats.Conn, logger *slog.Logger, what string, lost func(err error)) (stop func()) {
	ch := nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	var once sync.Once
	stopped := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case st, ok := <-ch:
				if !ok {
					return
				}
				switch st {
				case nats.CONNECTED:
					logger.Info("remote: NATS connection back", "conn", what, "server", nc.ConnectedUrlRedacted())
				case nats.RECONNECTING, nats.DISCONNECTED:
					logger.Warn("remote: NATS connection lost; reconnecting", "conn", what, "error", nc.LastError())
				case nats.CLOSED:
					select {
					case <-stopped:
						return
					default:
					}
					err := nc.LastError()
					logger.Error("remote: NATS connection closed for good", "conn", what, "error", err)
					if lost != nil {
						lost(err)
					}
					return
				}
			case <-stopped:
				return
			}
		}
	}()
	return func() {
		once.Do(func() {
			close(stopped)
			nc.RemoveStatusListener(ch)
			<-done
		})
	}
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
