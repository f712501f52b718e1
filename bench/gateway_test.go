package bench_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/bench/clients"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/supervisor"
)

// startGateway serves the bench server (stdio, supervised, the era of
// each client's choosing: a legacy-era twin for legacy clients) through a
// gateway on a loopback port, and returns its MCP URL.
func startGateway(tb testing.TB) string {
	h, err := gateway.New()
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	connect := func(extra ...snodo.Option) *supervisor.Client {
		sc, err := supervisor.Connect(ctx, snodo.Command(serverBin), supervisor.WithConnectOptions(append(h.ConnectOptions(), extra...)...))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = sc.Close(); <-sc.Done() })
		return sc
	}
	if err := h.Attach(connect()); err != nil {
		tb.Fatal(err)
	}
	if err := h.AttachLegacy(func(context.Context) (snodo.Session, error) { return connect(snodo.WithEra(snodo.EraLegacy)), nil }); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := gateway.NewServer(ln.Addr().String(), mux)
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// TestGatewaySmoke: every client — snodo's, go-sdk's, mcp-go's, the
// minimal one — in both eras, calls echo through the gateway.
func TestGatewaySmoke(t *testing.T) {
	url := startGateway(t)
	for _, era := range eras {
		for _, name := range clients.Names() {
			t.Run(name+"/"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, err := clients.Connect(ctx, name, clients.Options{URL: url, Era: era})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for range 3 {
					if text, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"hello"}`)); err != nil || text != "hello" {
						t.Fatalf("echo: %q, %v", text, err)
					}
				}
			})
		}
	}
}

// BenchmarkGateway is go-sdk's client calling echo at 1 in flight, modern
// era, against the bench server over Streamable HTTP directly, through the
// bare forwarder (the floor of an HTTP front for a stdio server) and
// through the gateway (the same server on stdio behind both); p50-µs is
// the median call.
func BenchmarkGateway(b *testing.B) {
	direct, floor := startHTTP(b), startHTTP(b, "-forward")
	for _, way := range []struct{ name, url string }{{"direct", direct.URL}, {"floor", floor.URL}, {"gateway", startGateway(b)}} {
		b.Run(way.name, func(b *testing.B) {
			ctx := context.Background()
			c, err := clients.Connect(ctx, "go-sdk", clients.Options{URL: way.url, Era: clients.Modern})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			args := json.RawMessage(`{"text":"hello"}`)
			for range 200 { // warm up
				if _, err := c.Call(ctx, "echo", args); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := c.Call(ctx, "echo", args); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}
