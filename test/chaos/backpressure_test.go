package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
)

// 600 requests of 256 KiB (150 MiB) to a server that stopped reading: the
// write queue holds at most WithMaxWriteQueue (16 MiB), the rest are
// refused at once, those queued are dropped as they time out, and the heap
// comes back once they have.
func TestNonReadingServerKeepsTheHeapBounded(t *testing.T) {
	r := dial(t, engine.Config{ShutdownGrace: 100 * time.Millisecond, Timeout: 2 * time.Second})
	if _, err := r.c.Request(context.Background(), "test/stopReading", nil, nil); err != nil {
		t.Fatal(err)
	}
	params := json.RawMessage(`{"pad":"` + strings.Repeat("p", 256<<10) + `"}`)
	base := heapInUse()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	began := time.Now()
	answers := call(r.c, 600, "test/echo", params, nil).collect(t, 60*time.Second)
	var timedOut, refused int
	for _, a := range answers {
		switch {
		case errors.Is(a.err, jsonrpc.ErrTimeout):
			timedOut++
		case errors.Is(a.err, sentinel.ErrWriteQueueFull):
			refused++
		default:
			t.Errorf("caller %d got %s, %v; want a timeout or a refusal", a.caller, a.result, a.err)
		}
	}
	after := int64(heapInUse()) - int64(base)
	close(stop)
	grew := int64(<-peak) - int64(base)
	t.Logf("600 × 256 KiB to a non-reading server: %d refused at once, %d timed out, all in %v; heap peak %+d MiB, %+d MiB after the timeouts",
		refused, timedOut, time.Since(began).Round(time.Millisecond), grew>>20, after>>20)
	// The 16 MiB queue in a buffer grown by doubling (up to 32 MiB), the
	// buffer it outgrew, and garbage the collector has not reached yet:
	// the collector lets the heap reach twice what is live before it
	// runs, and lags further on a loaded machine (typically +51 MiB, +101
	// seen under -race beside other builds). Without the bound: 150 MiB
	// and more, all of it live and kept until Close.
	if grew > 128<<20 {
		t.Errorf("heap grew by %d MiB, want < 128 MiB", grew>>20)
	}
	if after > 8<<20 {
		t.Errorf("heap still %d MiB above the start after every caller gave up, want < 8 MiB", after>>20)
	}
	r.finish(sentinel.ErrClosed)
}

// A legacy server sends 300,000 requests and reads nothing meanwhile:
// the refusals wait in the write queue, bounded by twice WithMaxWriteQueue
// (32 MiB); past that (300,000 refusals are about 42 MB) the connection
// stops with ErrNotReading instead of growing.
func TestRequestFloodFromANonReadingServerIsBounded(t *testing.T) {
	r := dial(t, engine.Config{}, "-era", "legacy", quickEOF)
	base := heapInUse()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	began := time.Now()
	_, err := r.c.Request(context.Background(), "test/floodRequests",
		map[string]any{"count": 300000, "method": "x/unknown", "pauseMs": 3000}, &engine.CallOptions{Timeout: 60 * time.Second})
	if !isClosed(err, sentinel.ErrNotReading) {
		t.Fatalf("the flood request got %v, want -32000 wrapping ErrNotReading", err)
	}
	took := time.Since(began)
	close(stop)
	grew := int64(<-peak) - int64(base)
	t.Logf("300,000 server requests, no answer read: stopped with ErrNotReading after %v; heap peak %+d MiB",
		took.Round(time.Millisecond), grew>>20)
	// 32 MiB of refusals in a buffer grown by doubling (up to 64 MiB),
	// plus the one it outgrew, plus the requests on their way through the
	// actor and garbage the collector has not reached: +101 to +125 MiB
	// measured under -race, whatever the load. Without the bound it grew
	// with the flood.
	if grew > 160<<20 {
		t.Errorf("heap grew by %d MiB, want < 160 MiB", grew>>20)
	}
	r.finish(sentinel.ErrNotReading)
}
