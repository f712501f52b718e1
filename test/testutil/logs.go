package testutil

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// LogRecorder is a slog.Handler that keeps every record (message plus
// attributes, as one line) for assertions. Safe for concurrent use.
type LogRecorder struct {
	mu   sync.Mutex
	msgs []string
}

// Logger returns a logger writing to r.
func (r *LogRecorder) Logger() *slog.Logger { return slog.New(r) }

// Enabled accepts every level.
func (r *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps the record as "message key=value …".
func (r *LogRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	r.mu.Lock()
	r.msgs = append(r.msgs, b.String())
	r.mu.Unlock()
	return nil
}

// WithAttrs ignores the attributes (records keep their own).
func (r *LogRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup ignores the group.
func (r *LogRecorder) WithGroup(string) slog.Handler { return r }

// Count is how many records contain substr.
func (r *LogRecorder) Count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// Has reports whether any record contains substr.
func (r *LogRecorder) Has(substr string) bool { return r.Count(substr) > 0 }

// CancelledIDs reads the answer of the test server's test/waitNotification
// (or test/received) for notifications/cancelled and returns the request
// IDs the cancellations named, in arrival order.
func CancelledIDs(tb testing.TB, raw json.RawMessage) []int64 {
	tb.Helper()
	var out struct {
		Messages []struct {
			Params struct {
				RequestID int64 `json:"requestId"`
			} `json:"params"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("testutil: not a test/waitNotification answer: %v: %s", err, raw)
	}
	ids := make([]int64, 0, len(out.Messages))
	for _, m := range out.Messages {
		ids = append(ids, m.Params.RequestID)
	}
	return ids
}

// Messages returns a copy of every record kept, in order.
func (r *LogRecorder) Messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}
