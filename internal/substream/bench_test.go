package substream

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/engine"
)

// BenchmarkEvents measures events per second from the test server through
// n subscriptions on one connection to their readers. Each test/emit call
// sends one event to every subscription, chunk times.
func BenchmarkEvents(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			c := startConn(b, engine.Config{})
			subs := make([]*Subscription, n)
			for i := range subs {
				subs[i] = open(b, c, toolsFilter, Options{MaxQueue: 1 << 16})
			}
			perSub := max(b.N/n, 1)
			chunk := max(1000/n, 1)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for _, s := range subs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range perSub {
						<-s.Events()
					}
				}()
			}
			for sent := 0; sent < perSub; sent += chunk {
				call(b, c, "test/emit", map[string]any{"method": "notifications/tools/list_changed", "count": min(chunk, perSub-sent)})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(perSub*n)/time.Since(start).Seconds(), "events/s")
		})
	}
}
