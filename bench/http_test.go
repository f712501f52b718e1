package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/bench/clients"
	"github.com/snodo/snodo/bench/server"
)

// startHTTP starts the fast Streamable HTTP server (benchserver -http) in
// a process of its own for the test or benchmark.
func startHTTP(tb testing.TB, flags ...string) *server.HTTPProcess {
	p, err := server.StartHTTP(serverBin, flags...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// TestHTTPSmoke: every client, in both eras, calls echo over Streamable
// HTTP against the fast HTTP server, and those that open a listen stream
// receive an emit call's events on it (modern era).
func TestHTTPSmoke(t *testing.T) {
	srv := startHTTP(t)
	for _, era := range eras {
		for _, name := range clients.Names() {
			t.Run(name+"/"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, err := clients.Connect(ctx, name, clients.Options{URL: srv.URL, Era: era})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for range 3 {
					if text, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"hello"}`)); err != nil || text != "hello" {
						t.Fatalf("echo: %q, %v", text, err)
					}
				}
				if r, ok := c.(clients.Requester); ok {
					res, err := r.Request(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`))
					if err != nil || !strings.Contains(string(res), `"hello"`) {
						t.Fatalf("Request: %s, %v", res, err)
					}
				}
			})
			if era != clients.Modern || name == "minimal" {
				continue
			}
			t.Run(name+"/"+era+"/listen", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var events atomic.Int64
				c, err := clients.Connect(ctx, name, clients.Options{URL: srv.URL, Era: era, OnEvent: func() { events.Add(1) }})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if text, err := c.Call(ctx, "emit", json.RawMessage(`{"count":10}`)); err != nil || text != "10" {
					t.Fatalf("emit: %q, %v", text, err)
				}
				for events.Load() < 10 {
					if ctx.Err() != nil {
						t.Fatalf("%d of 10 events arrived", events.Load())
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
}

// BenchmarkHTTP is issue 30's HTTP comparison: the echo tool's typed call
// through each client (snodo.ConnectHTTP, go-sdk's StreamableClientTransport,
// mcp-go's streamable HTTP client, and the minimal net/http client, the
// ceiling), plus snodo's raw Request, against the fast Streamable HTTP
// server in a process of its own, at 1 and 64 in flight, both eras.
// Besides ns/op it reports cpu-ns/op (this process: the client alone) and
// srv-cpu-ns/op (the server process, to show it is not the bottleneck);
// compare interleaved runs with benchstat:
//
//	go test -run '^$' -bench HTTP -count 8 -benchmem | benchstat -
func BenchmarkHTTP(b *testing.B) {
	for _, era := range eras {
		for _, name := range append(clients.Names(), "snodo-request") {
			for _, inFlight := range []int{1, 64} {
				b.Run(fmt.Sprintf("era=%s/client=%s/inflight=%d", era, name, inFlight), func(b *testing.B) {
					srv := startHTTP(b)
					client := strings.TrimSuffix(name, "-request")
					c, err := clients.Connect(context.Background(), client, clients.Options{URL: srv.URL, Era: era})
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					args := json.RawMessage(`{"text":"hello"}`)
					call := func() error {
						text, err := c.Call(context.Background(), "echo", args)
						if err == nil && text != "hello" {
							err = fmt.Errorf("echo answered %q", text)
						}
						return err
					}
					if client != name {
						r := c.(clients.Requester)
						params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
						call = func() error {
							_, err := r.Request(context.Background(), "tools/call", params)
							return err
						}
					}
					var s0 time.Duration
					timeCalls(b, inFlight, call, func() { s0 = srv.CPU() })
					b.ReportMetric(float64(srv.CPU()-s0)/float64(b.N), "srv-cpu-ns/op")
				})
			}
		}
	}
}

// BenchmarkHTTPListen is snodo's listen stream over Streamable HTTP
// (modern era): events per second from the emit tool's batches of 1,000
// notifications/tools/list_changed on one subscriptions/listen stream, each
// batch timed from the call until its last event reached the
// subscription's channel. One op is one event.
func BenchmarkHTTPListen(b *testing.B) {
	for _, name := range []string{"snodo", "go-sdk", "mcp-go"} {
		b.Run("client="+name, func(b *testing.B) {
			srv := startHTTP(b)
			var got atomic.Int64
			all := make(chan struct{}, 1)
			var want atomic.Int64
			c, err := clients.Connect(context.Background(), name, clients.Options{URL: srv.URL, Era: clients.Modern, OnEvent: func() {
				if got.Add(1) == want.Load() {
					all <- struct{}{}
				}
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			emit := func(n int) {
				got.Store(0)
				want.Store(int64(n))
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if text, err := c.Call(ctx, "emit", json.RawMessage(`{"count":`+strconv.Itoa(n)+`}`)); err != nil || text != strconv.Itoa(n) {
					b.Fatalf("emit: %q, %v", text, err)
				}
				select {
				case <-all:
				case <-ctx.Done():
					b.Fatalf("%d of %d events arrived", got.Load(), n)
				}
			}
			emit(100)
			cpu0 := cpuTime()
			b.ResetTimer()
			for n := b.N; n > 0; n -= 1000 {
				emit(min(n, 1000))
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
