package snodo

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
)

// BenchmarkNotificationPath is the cost of one notification from the
// reader's hook to the handler: queue, drain goroutine, delivery.
func BenchmarkNotificationPath(b *testing.B) {
	var wg sync.WaitGroup
	q := newNotifier(&mcpConfig{notify: func(context.Context, *Notification) { wg.Done() },
		notifyItems: b.N + 1, notifyBytes: 1 << 40}, nil) // nothing dropped: every push is delivered
	params := json.RawMessage(`{"level":"info","data":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	wg.Add(b.N)
	b.ResetTimer()
	for range b.N {
		q.push(ctx, methodLogMessage, params)
	}
	wg.Wait()
}
