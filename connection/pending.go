package connection

import (
	"encoding/json"
	"sync"
	"time"
)

// maxQueuedProgress bounds the progress updates waiting for a slow caller;
// past it the newest update replaces the last queued one, so a progress
// flood cannot grow memory (progress is cumulative: the latest subsumes).
const maxQueuedProgress = 64

// call is one request waiting for its answer. Its fields are guarded by
// the table's mutex; wake is signalled whenever there is news for the
// caller (progress or the answer).
type call struct {
	wake   chan struct{} // capacity 1
	timer  *time.Timer   // the request's timeout, reused across requests
	ticket uint64        // the request line's ticket in the writer (for drop)

	done   bool
	result json.RawMessage
	err    error

	wantProgress bool
	progress     []Progress

	// stream receives notifications correlated to this request by
	// _meta["io.modelcontextprotocol/subscriptionId"]; it runs on the
	// reader goroutine and must not block.
	stream func(method string, params json.RawMessage)
}

// calls are pooled: a call, its wake channel and its timer are reused by
// later requests, so a request allocates none of them.
var callPool = sync.Pool{New: func() any { return &call{wake: make(chan struct{}, 1)} }}

func newCall(opts *CallOptions) *call {
	cl := callPool.Get().(*call)
	// Either option asks the server for progress: resetting the timeout
	// on progress needs progress even without a callback.
	cl.wantProgress, cl.stream = opts.OnProgress != nil || opts.ResetTimeoutOnProgress, opts.Stream
	return cl
}

// startTimer arms the call's timer and returns its channel.
func (cl *call) startTimer(d time.Duration) <-chan time.Time {
	if cl.timer == nil {
		cl.timer = time.NewTimer(d)
	} else {
		cl.timer.Reset(d)
	}
	return cl.timer.C
}

// release returns a finished call to the pool. The call must be out of
// the table: nobody else can reach it then, so nothing signals it after
// its channel is drained. (Since Go 1.23 a stopped timer delivers nothing.)
func (cl *call) release() {
	if cl.stream != nil {
		return // stream sinks may still run on the reader: never reuse
	}
	if cl.timer != nil {
		cl.timer.Stop()
	}
	select {
	case <-cl.wake:
	default:
	}
	cl.done, cl.result, cl.err, cl.progress, cl.wantProgress, cl.ticket = false, nil, nil, nil, false, 0
	callPool.Put(cl)
}

// table is the connection's one table of requests in flight. It is owned
// by the Conn: callers add and abandon their own entries, the reader
// completes them, and the actor fails them all when the connection stops.
type table struct {
	mu     sync.Mutex
	nextID int64
	calls  map[int64]*call
	closed error // set once: every later add fails with it
}

func newTable() *table { return &table{calls: make(map[int64]*call)} }

// add registers c under a fresh id. IDs increase and are never reused.
func (t *table) add(c *call) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return 0, t.closed
	}
	t.nextID++
	t.calls[t.nextID] = c
	return t.nextID, nil
}

// complete delivers the answer to id; false when no such request waits.
func (t *table) complete(id int64, result json.RawMessage, err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.calls[id]
	if c == nil {
		return false
	}
	delete(t.calls, id)
	c.done, c.result, c.err = true, result, err
	signal(c.wake)
	return true
}

// progress queues a progress update for id; false when nobody wants it.
func (t *table) progress(id int64, p Progress) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.calls[id]
	if c == nil || !c.wantProgress {
		return false
	}
	if len(c.progress) < maxQueuedProgress {
		c.progress = append(c.progress, p)
	} else {
		c.progress[len(c.progress)-1] = p
	}
	signal(c.wake)
	return true
}

// streamOf returns the stream sink of request id, or nil.
func (t *table) streamOf(id int64) func(string, json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.calls[id]; c != nil {
		return c.stream
	}
	return nil
}

// take hands the caller its queued progress and whether the answer is in.
func (t *table) take(c *call) (progress []Progress, done bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	progress, c.progress = c.progress, nil
	return progress, c.done
}

// abandon removes id unless its answer already arrived; it reports whether
// the caller gave up first (and so must tell the server).
func (t *table) abandon(id int64, c *call) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.done {
		return false
	}
	delete(t.calls, id)
	return true
}

// close fails every waiting request with err and refuses new ones.
func (t *table) close(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return
	}
	t.closed = err
	for id, c := range t.calls {
		c.done, c.err = true, err
		signal(c.wake)
		delete(t.calls, id)
	}
}

// inFlight counts the requests waiting for an answer.
func (t *table) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.calls)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
