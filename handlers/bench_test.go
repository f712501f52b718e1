package handlers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/test/testutil"
)

// BenchmarkServerRequestRoundTrip measures one server request round trip:
// the test server sends a request, the client spawns a child actor that
// runs the handler, and the answer goes back. at_once=N keeps N server
// requests in flight (N test/serverRequest loops, each sequential).
// B/op and allocs/op are the client's, including a share of the
// test/serverRequest calls that drive the loop (one per 1000 round trips).
func BenchmarkServerRequestRoundTrip(b *testing.B) {
	for _, atOnce := range []int{1, 16} {
		b.Run(fmt.Sprintf("at_once=%d", atOnce), func(b *testing.B) {
			pong := struct{}{}
			h := func(context.Context, *handlers.Request) (any, error) { return pong, nil }
			cmd, args := testutil.Server(b, quickEOF)
			c, err := engine.Start(context.Background(), engine.Config{
				Command: cmd, Args: args, Handler: h, MaxServerRequests: atOnce, Timeout: -1,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { c.Close(); <-c.Done() }()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range atOnce {
				n := b.N / atOnce
				if w < b.N%atOnce {
					n++
				}
				wg.Go(func() { drive(b, c, n) })
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
		})
	}
}

// drive makes the server send n ping requests, one after the other.
func drive(b *testing.B, c *engine.Conn, n int) {
	const chunk = 1000 // keeps the report line well under the line limit
	for n > 0 {
		k := min(n, chunk)
		n -= k
		_, err := c.Request(context.Background(), "test/serverRequest",
			map[string]any{"method": "ping", "count": k, "timeoutMs": int(time.Minute / time.Millisecond)}, nil)
		if err != nil {
			b.Error(err)
			return
		}
	}
}
