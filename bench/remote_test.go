package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/remote/embedded"
	"github.com/snodo/snodo/supervisor"
)

// BenchmarkRemote compares one tools/call through a local pool with the
// same call to the same pool served over NATS (an embedded server, host
// and caller in this process: one machine, loopback TCP), at 1 and 64 in
// flight, against the fast server. The difference is the cost of the hop:
// two NATS messages (request and reply) through the NATS server, and the
// host's bookkeeping.
//
//	go test -run '^$' -bench Remote -count 5 -benchmem | benchstat -
func BenchmarkRemote(b *testing.B) {
	for _, transport := range []string{"local", "remote"} {
		for _, inFlight := range []int{1, 64} {
			b.Run(fmt.Sprintf("transport=%s/inflight=%d", transport, inFlight), func(b *testing.B) {
				pool, err := supervisor.NewPool(context.Background(), snodo.Command(serverBin, "-fast"), 1)
				if err != nil {
					b.Fatal(err)
				}
				var r snodo.Session = pool
				if transport == "remote" {
					nc, err := nats.Connect(servedPool(b, pool))
					if err != nil {
						b.Fatal(err)
					}
					defer nc.Close()
					c, err := remote.NewClient(nc, "fast")
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					r = c
				} else {
					defer pool.Close()
				}
				params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
				call := func() error {
					_, err := r.Request(context.Background(), "tools/call", params)
					return err
				}
				timeCalls(b, inFlight, call)
			})
		}
	}
}

// BenchmarkRemoteVsBareNATS compares 16 remote calls in flight with 16
// bare nats.go request/replies on the same embedded NATS server, each
// answered by a subscriber that echoes the payload: the floor a call over
// NATS cannot go below (two messages through the server), against what a
// remote call adds (headers, the host's goroutine, the MCP server's
// answer over stdio, heartbeat and keep-alive bookkeeping).
//
//	go test -run '^$' -bench RemoteVsBareNATS -benchtime 5000x -count 3 -benchmem
func BenchmarkRemoteVsBareNATS(b *testing.B) {
	const inFlight = 16
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	b.Run("transport=bare-nats/inflight=16", func(b *testing.B) {
		srv, err := embedded.Start(embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Shutdown()
		responder, err := nats.Connect(srv.URL())
		if err != nil {
			b.Fatal(err)
		}
		defer responder.Close()
		if _, err := responder.QueueSubscribe("bare.call", "bare", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			b.Fatal(err)
		}
		nc, err := nats.Connect(srv.URL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		timeCalls(b, inFlight, func() error {
			_, err := nc.RequestWithContext(context.Background(), "bare.call", params)
			return err
		})
	})
	b.Run("transport=remote/inflight=16", func(b *testing.B) {
		pool, err := supervisor.NewPool(context.Background(), snodo.Command(serverBin, "-fast"), 1)
		if err != nil {
			b.Fatal(err)
		}
		c, err := remote.Dial(context.Background(), servedPool(b, pool), "fast")
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		timeCalls(b, inFlight, func() error {
			_, err := c.Request(context.Background(), "tools/call", params)
			return err
		})
	})
}

// servedPool serves pool under the name "fast" from a host on a NATS
// server embedded for b, and returns the server's URL; the host and the
// server stop when b ends.
func servedPool(b *testing.B, pool *supervisor.Pool) string {
	srv, err := embedded.Start(embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	h, err := remote.NewHost(context.Background(), srv.URL(), remote.Serve("fast", pool))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	return srv.URL()
}
