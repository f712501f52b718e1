package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// Faults the connection survives: every caller still gets its own answer,
// the anomaly is logged, and the connection ends only when closed.

func TestGarbageAndHalfWrittenLines(t *testing.T) {
	r := dial(t, engine.Config{})
	echoes := call(r.c, 20, "test/echo", map[string]string{"k": "v"}, nil)
	garbage := call(r.c, 3, "test/garbage", nil, nil)
	split := call(r.c, 3, "test/split", map[string]int{"parts": 40, "delayMs": 2}, nil)
	for _, a := range echoes.collect(t, 10*time.Second) {
		if a.err != nil || string(a.result) != `{"k":"v"}` {
			t.Errorf("echo caller %d: %s, %v", a.caller, a.result, a.err)
		}
	}
	for _, a := range append(garbage.collect(t, 10*time.Second), split.collect(t, 10*time.Second)...) {
		if a.err != nil || string(a.result) != `{"ok":true}` {
			t.Errorf("caller %d: %s, %v", a.caller, a.result, a.err)
		}
	}
	if n := r.logs.Count("is not JSON-RPC"); n < 3*6 {
		t.Errorf("%d garbage lines logged, want at least %d", n, 3*6)
	}
	if err := r.c.Err(); err != nil {
		t.Errorf("Err() = %v while running", err)
	}
	r.finish(sentinel.ErrClosed)
}

func TestDuplicateAndUnsolicitedResponses(t *testing.T) {
	r := dial(t, engine.Config{})
	slow := call(r.c, 4, "test/sleep", map[string]int{"ms": 200}, nil)
	dups := call(r.c, 10, "test/duplicate", nil, nil)
	for _, a := range dups.collect(t, 10*time.Second) {
		if a.err != nil || string(a.result) != `{"n":1}` {
			t.Errorf("duplicate caller %d: %s, %v (want the first answer, once)", a.caller, a.result, a.err)
		}
	}
	// Responses to ids never used, and to a string id.
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":424242,"result":{"unsolicited":true}}`,
		`{"jsonrpc":"2.0","id":"c1","error":{"code":1,"message":"x"}}`,
	} {
		if _, err := r.c.Request(context.Background(), "test/serverRequest",
			map[string]any{"rawRequest": raw, "timeoutMs": 50}, nil); err != nil {
			t.Fatalf("unsolicited %s: %v", raw, err)
		}
	}
	for _, a := range slow.collect(t, 10*time.Second) {
		if a.err != nil || string(a.result) != `{"slept":200}` {
			t.Errorf("slow caller %d: %s, %v", a.caller, a.result, a.err)
		}
	}
	if n := r.logs.Count("ignored a response to no request in flight"); n != 2*10+2 {
		t.Errorf("%d ignored responses logged, want %d", n, 2*10+2)
	}
	if n := r.lent.InFlight(); n != 0 {
		t.Errorf("InFlight() = %d", n)
	}
	r.finish(sentinel.ErrClosed)
}

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// peakHeap samples HeapInuse until stop is closed and returns the peak.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

const heapBound = 64 << 20

func TestOneGiBLineKeepsTheHeapFlat(t *testing.T) {
	r := dial(t, engine.Config{}) // default line cap: 16 MiB
	base := heapInUse()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	const size = 1 << 30
	// The answer is discarded as it arrives: its caller times out, while
	// the rest of the gigabyte still streams through.
	big := call(r.c, 1, "test/overlong", map[string]int{"bytes": size}, &engine.CallOptions{Timeout: time.Second})
	a := big.collect(t, 30*time.Second)[0]
	var e *jsonrpc.Error
	if !errors.As(a.err, &e) || e.Code != jsonrpc.CodeTimeout || !errors.Is(a.err, jsonrpc.ErrTimeout) {
		t.Errorf("overlong caller got %s, %v; want the local -32001", a.result, a.err)
	}
	testutil.Eventually(t, func() bool {
		return r.logs.Count(fmt.Sprintf("discarded an overlong line from the server; the request it answered will time out bytes=%d", size)) == 1
	}, 60*time.Second, "the whole line discarded")
	close(stop)
	grew := int64(<-peak) - int64(base)
	t.Logf("1 GiB line: heap in use %d MiB before, peak %+d MiB during", base>>20, grew>>20)
	if grew > heapBound {
		t.Errorf("heap grew by %d MiB while a 1 GiB line was discarded, want < %d MiB", grew>>20, heapBound>>20)
	}
	// Later lines are unaffected.
	for _, a := range call(r.c, 5, "test/echo", []int{1, 2}, nil).collect(t, 10*time.Second) {
		if a.err != nil || string(a.result) != `[1,2]` {
			t.Errorf("echo after the overlong line: %s, %v", a.result, a.err)
		}
	}
	r.finish(sentinel.ErrClosed)
}

func TestStderrFloodIntoABlockedWriter(t *testing.T) {
	w := blockingWriter{release: make(chan struct{})}
	r := dial(t, engine.Config{Stderr: w})
	base := heapInUse()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	const lines, perLine = 100000, 1000 // 100 MB that nobody reads
	flood := call(r.c, 1, "test/stderr", map[string]int{"lines": lines, "bytesPerLine": perLine}, nil)
	for _, a := range call(r.c, 50, "test/echo", "during", nil).collect(t, 10*time.Second) {
		if a.err != nil || string(a.result) != `"during"` {
			t.Errorf("echo during the flood: %s, %v", a.result, a.err)
		}
	}
	a := flood.collect(t, 60*time.Second)[0]
	if a.err != nil || string(a.result) != fmt.Sprintf(`{"lines":%d}`, lines) {
		t.Errorf("flood caller: %s, %v", a.result, a.err)
	}
	close(stop)
	grew := int64(<-peak) - int64(base)
	t.Logf("stderr flood of %d MB: peak heap %+d MiB", lines*perLine/1000000, grew>>20)
	if grew > heapBound {
		t.Errorf("heap grew by %d MiB during a stderr flood", grew>>20)
	}
	close(w.release) // the user's writer lets go: the forwarding goroutine ends
	r.finish(sentinel.ErrClosed)
}

func TestProgressFloodCannotPileUp(t *testing.T) {
	r := dial(t, engine.Config{})
	base := heapInUse()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	const count = 50000
	var calls atomic.Int64
	var last engine.Progress
	slow := func(p engine.Progress) { // a callback far slower than the server
		if calls.Add(1)%64 == 0 {
			time.Sleep(time.Millisecond)
		}
		if p.Progress < last.Progress {
			t.Errorf("progress went back from %v to %v", last.Progress, p.Progress)
		}
		last = p
	}
	res, err := r.c.Request(context.Background(), "test/progress", map[string]int{"count": count},
		&engine.CallOptions{OnProgress: slow, Timeout: time.Minute})
	if err != nil || string(res) != fmt.Sprintf(`{"done":%d}`, count) {
		t.Fatalf("progress caller: %s, %v", res, err)
	}
	if last.Progress != count || last.Total != count {
		t.Errorf("last progress %+v, want %d of %d (the latest update is never dropped)", last, count, count)
	}
	// Progress nobody asked for is dropped at once.
	if _, err := r.c.Request(context.Background(), "test/flood",
		map[string]any{"count": count, "method": "notifications/progress"}, &engine.CallOptions{Timeout: time.Minute}); err != nil {
		t.Errorf("unrequested progress flood: %v", err)
	}
	close(stop)
	grew := int64(<-peak) - int64(base)
	t.Logf("progress flood: %d updates, %d callbacks, peak heap %+d MiB", count, calls.Load(), grew>>20)
	if grew > heapBound {
		t.Errorf("heap grew by %d MiB during a progress flood", grew>>20)
	}
	r.finish(sentinel.ErrClosed)
}

func TestServerRequestFloodIsBounded(t *testing.T) {
	const bound, flood = 16, 1000
	var running, peakRunning, handled atomic.Int64
	release := make(chan struct{})
	h := func(ctx context.Context, req *handlers.Request) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peakRunning.Load()
			if n <= p || peakRunning.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		handled.Add(1)
		return map[string]any{"roots": []any{}}, nil
	}
	r := dial(t, engine.Config{Handler: h, MaxServerRequests: bound})
	srv := call(r.c, 1, "test/serverRequest",
		map[string]any{"method": "roots/list", "count": flood, "concurrent": true, "timeoutMs": 20000},
		&engine.CallOptions{Timeout: time.Minute})
	testutil.Eventually(t, func() bool { return running.Load() == bound }, 10*time.Second, "handlers at the bound")
	testutil.Eventually(t, func() bool {
		return r.logs.Count("came over the bound of handlers running at once") == flood-bound
	}, 20*time.Second, "the requests over the bound rejected")
	close(release)
	a := srv.collect(t, 30*time.Second)[0]
	if a.err != nil {
		t.Fatalf("test/serverRequest: %v", a.err)
	}
	var out struct {
		Responses []struct {
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(a.result, &out); err != nil {
		t.Fatal(err)
	}
	var ok, rejected int
	for _, resp := range out.Responses {
		switch {
		case resp.Error != nil && resp.Error.Code == jsonrpc.CodeInternalError:
			rejected++
		case resp.Result != nil:
			ok++
		}
	}
	t.Logf("server-request flood: %d sent, %d handled, %d rejected with -32603, at most %d handlers at once", flood, ok, rejected, peakRunning.Load())
	if len(out.Responses) != flood || ok != bound || rejected != flood-bound || peakRunning.Load() > bound {
		t.Errorf("%d responses, %d handled, %d rejected, peak %d; want %d, %d, %d, <= %d",
			len(out.Responses), ok, rejected, peakRunning.Load(), flood, bound, flood-bound, bound)
	}
	r.finish(sentinel.ErrClosed)
}

func TestHandlerPanicsAreAnswered(t *testing.T) {
	h := func(context.Context, *handlers.Request) (any, error) { panic("handler bug") }
	r := dial(t, engine.Config{Handler: h})
	res, err := r.c.Request(context.Background(), "test/serverRequest",
		map[string]any{"method": "sampling/createMessage", "count": 20}, nil) // one after another: a panic frees its slot
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Responses []struct {
			Error *jsonrpc.Error `json:"error"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	for i, resp := range out.Responses {
		if resp.Error == nil || resp.Error.Code != jsonrpc.CodeInternalError || resp.Error.Message != "internal error: the client's handler for sampling/createMessage panicked" {
			t.Errorf("response %d: %+v", i, resp.Error)
		}
	}
	if len(out.Responses) != 20 {
		t.Errorf("%d responses, want 20", len(out.Responses))
	}
	if err := r.c.Err(); err != nil {
		t.Errorf("a handler panic stopped the connection: %v", err)
	}
	r.finish(sentinel.ErrClosed)
}

func TestCloseRacingAThousandCalls(t *testing.T) {
	r := dial(t, engine.Config{}, quickEOF)
	const n = 1000
	start := make(chan struct{})
	cr := &crowd{answers: make(chan answer, n), count: make([]atomic.Int32, n), n: n}
	var issued sync.WaitGroup
	for i := range n {
		issued.Add(1)
		go func() {
			method, params := "test/echo", any(map[string]int{"i": i})
			if i%2 == 1 {
				method, params = "test/sleep", map[string]int{"ms": 2000} // still in flight when Close comes
			}
			issued.Done()
			<-start
			res, err := r.c.Request(context.Background(), method, params, nil)
			cr.count[i].Add(1)
			cr.answers <- answer{caller: i, result: res, err: err}
		}()
	}
	issued.Wait()
	close(start)
	testutil.Eventually(t, func() bool { return len(cr.answers) >= 50 }, 10*time.Second, "calls under way")
	var closers sync.WaitGroup
	for range 4 { // Close from several goroutines at once
		closers.Go(func() {
			if err := r.c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	closers.Wait()
	var answered, closed int
	for _, a := range cr.collect(t, 20*time.Second) {
		switch {
		case a.err == nil:
			answered++
		case isClosed(a.err, sentinel.ErrClosed):
			closed++
		default:
			t.Errorf("caller %d got %v", a.caller, a.err)
		}
	}
	t.Logf("Close racing %d calls: %d answered by the server, %d failed with -32000 (closed)", n, answered, closed)
	if closed == 0 {
		t.Errorf("no call was cut off by Close")
	}
	r.finish(sentinel.ErrClosed)
}
