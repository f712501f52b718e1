package connection

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
)

// maxQueuedProgress bounds the progress updates waiting for a slow caller;
// past it the newest update replaces the last queued one, so a progress
// flood cannot grow memory (progress is cumulative: the latest subsumes).
const maxQueuedProgress = 64

// call is one request waiting for its answer. Its fields are guarded by
// the table's mutex; wake is signalled whenever there is news for the
// caller (progress, the answer, or a deadline passed). done is also
// atomic: a caller without progress reads its answer without the lock.
type call struct {
	wake   chan struct{} // capacity 1
	id     int64         // the request's ID while it is in the table
	ticket uint64        // the request line's ticket in the writer (for drop)

	done   atomic.Bool // result and err are set, and the call is out of the table
	result json.RawMessage
	err    error

	// Deadlines, on the table's clock (monoNow); 0: none. deadline is the
	// timeout (moved on by progress when asked), total the cap on the
	// whole wait. expired says which one the table's timer found passed.
	deadline, total int64
	expired         expiry

	wantProgress bool
	progress     []Progress

	// stream receives notifications correlated to this request by
	// _meta["io.modelcontextprotocol/subscriptionId"]; it runs on the
	// reader goroutine and must not block.
	stream func(method string, params json.RawMessage)
}

// expiry is which deadline of a call passed.
type expiry uint8

const (
	notExpired expiry = iota
	timeoutExpired
	totalExpired
)

// due is the call's earliest deadline, 0 for none.
func (cl *call) due() int64 {
	if cl.total != 0 && (cl.deadline == 0 || cl.total < cl.deadline) {
		return cl.total
	}
	return cl.deadline
}

// calls are pooled: a call and its wake channel are reused by later
// requests, so a request allocates neither.
var callPool = sync.Pool{New: func() any { return &call{wake: make(chan struct{}, 1)} }}

func newCall(opts *CallOptions) *call {
	cl := callPool.Get().(*call)
	// Either option asks the server for progress: resetting the timeout
	// on progress needs progress even without a callback.
	cl.wantProgress, cl.stream = opts.OnProgress != nil || opts.ResetTimeoutOnProgress, opts.Stream
	return cl
}

// release returns a finished call to the pool. The call must be out of
// the table: nobody but a signal already under way reaches it then; such
// a late signal only wakes its next user early, who finds nothing new and
// waits again.
func (cl *call) release() {
	if cl.stream != nil {
		return // stream sinks may still run on the reader: never reuse
	}
	select {
	case <-cl.wake:
	default:
	}
	cl.done.Store(false)
	cl.result, cl.err, cl.progress, cl.wantProgress, cl.ticket = nil, nil, nil, false, 0
	cl.deadline, cl.total, cl.expired = 0, 0, notExpired
	callPool.Put(cl)
}

// clockBase anchors monoNow, the monotonic clock deadlines are kept on.
var clockBase = time.Now()

func monoNow() int64 { return int64(time.Since(clockBase)) }

// after is the deadline d from now on the table's clock; 0 for d <= 0.
func after(now int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return now + int64(d)
}

// table is the connection's one table of requests in flight. It is owned
// by the Conn: callers add and abandon their own entries, the reader
// completes them, and the actor fails them all when the connection stops.
//
// Timeouts: one timer per table, not one per request. It is armed for the
// earliest deadline of the calls in flight (or, when that call has
// finished since, for a moment when nothing is due: it then re-arms for
// the earliest deadline left). With one timeout for every request, a new
// request's deadline is never the earliest, so a request costs no timer
// operation at all; the timer fires about once per timeout, and each
// firing looks at every call in flight.
//
// The calls are kept in a ring of slots indexed by ID: IDs are handed out
// in order, so the calls in flight at once almost always land in free
// slots, and finding one is an index, not a hash. A call whose slot is
// still taken (by a request, such as a subscription, outliving the next
// tableSlots IDs) goes to a map instead.
type table struct {
	mu       sync.Mutex
	nextID   int64
	slots    [tableSlots]*call
	overflow map[int64]*call // calls whose slot was taken; nil until one was
	n        int             // calls in the table
	closed   error           // set once: every later add fails with it

	timer *time.Timer // runs expire; nil until a call has a deadline
	armed int64       // when the timer fires (monoNow); 0: not armed

	// answers counts the calls waiting for one answer (streams, which
	// stay for as long as a subscription, do not count), without the lock.
	answers atomic.Int64
}

// tableSlots is the size of the table's ring: a power of two, and more
// than the calls most connections have in flight at once.
const tableSlots = 256

func newTable() *table { return &table{} }

// put files c under id. The caller holds mu.
func (t *table) put(id int64, c *call) {
	c.id = id
	t.n++
	if s := &t.slots[id&(tableSlots-1)]; *s == nil {
		*s = c
		return
	}
	if t.overflow == nil {
		t.overflow = make(map[int64]*call)
	}
	t.overflow[id] = c
}

// lookup finds the call filed under id, nil when none is. The caller
// holds mu.
func (t *table) lookup(id int64) *call {
	if c := t.slots[id&(tableSlots-1)]; c != nil && c.id == id {
		return c
	}
	if len(t.overflow) > 0 {
		return t.overflow[id]
	}
	return nil
}

// remove takes c, filed under c.id, out of the table (if it is still
// there). The caller holds mu.
func (t *table) remove(c *call) {
	if s := &t.slots[c.id&(tableSlots-1)]; *s == c {
		*s = nil
		t.n--
	} else if t.overflow[c.id] == c {
		delete(t.overflow, c.id)
		t.n--
	}
}

// each calls fn for every call in the table; fn may remove the call it
// is given. The caller holds mu.
func (t *table) each(fn func(*call)) {
	for _, c := range t.slots[:] {
		if c != nil {
			fn(c)
		}
	}
	for _, c := range t.overflow {
		fn(c)
	}
}

// add registers c under a fresh id with its deadlines (0: none). IDs
// increase and are never reused.
func (t *table) add(c *call, deadline, total int64) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return 0, t.closed
	}
	t.nextID++
	t.put(t.nextID, c)
	if c.stream == nil {
		t.answers.Add(1)
	}
	c.deadline, c.total = deadline, total
	if due := c.due(); due != 0 && (t.armed == 0 || due < t.armed) {
		t.arm(due)
	}
	return t.nextID, nil
}

// arm sets the timer to fire at the deadline at. The table's lock is held.
func (t *table) arm(at int64) {
	d := time.Duration(at - monoNow())
	if t.timer == nil {
		t.timer = time.AfterFunc(d, t.expire)
	} else {
		t.timer.Reset(d)
	}
	t.armed = at
}

// expire runs on the timer: it marks every call whose deadline passed
// and wakes its caller (who gives up, unless the answer wins the race),
// and re-arms for the earliest deadline still ahead.
func (t *table) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return
	}
	now := monoNow()
	var next int64
	t.each(func(c *call) {
		due := c.due()
		switch {
		case due == 0 || c.expired != notExpired:
		case due <= now:
			c.expired = timeoutExpired
			if due == c.total {
				c.expired = totalExpired
			}
			signal(c.wake)
		case next == 0 || due < next:
			next = due
		}
	})
	t.armed = 0
	if next != 0 {
		t.arm(next)
	}
}

// extend moves c's timeout to deadline (progress arrived), unless the
// cap on the whole wait has passed.
func (t *table) extend(c *call, deadline int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.deadline = deadline
	if c.expired == timeoutExpired {
		c.expired = notExpired
	}
	if due := c.due(); due != 0 && t.closed == nil && (t.armed == 0 || due < t.armed) {
		t.arm(due)
	}
}

// complete delivers the answer to id; false when no such request waits.
func (t *table) complete(id int64, result json.RawMessage, err error) bool {
	t.mu.Lock()
	c := t.lookup(id)
	if c == nil {
		t.mu.Unlock()
		return false
	}
	t.remove(c)
	if c.stream == nil {
		t.answers.Add(-1)
	}
	c.result, c.err = result, err
	c.done.Store(true)
	t.mu.Unlock()
	signal(c.wake) // outside the lock: the caller it wakes may take it at once
	return true
}

// progress queues a progress update for id; false when nobody wants it.
func (t *table) progress(id int64, p Progress) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.lookup(id)
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
	if c := t.lookup(id); c != nil {
		return c.stream
	}
	return nil
}

// take hands the caller its queued progress, whether the answer is in,
// and which deadline passed, if any.
func (t *table) take(c *call) (progress []Progress, done bool, expired expiry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	progress, c.progress = c.progress, nil
	return progress, c.done.Load(), c.expired
}

// abandon removes id unless its answer already arrived; it reports whether
// the caller gave up first (and so must tell the server).
func (t *table) abandon(id int64, c *call) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.done.Load() {
		return false
	}
	t.remove(c)
	if c.stream == nil {
		t.answers.Add(-1)
	}
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
	if t.timer != nil {
		t.timer.Stop()
		t.armed = 0
	}
	t.each(func(c *call) {
		c.err = err
		c.done.Store(true)
		signal(c.wake)
		t.remove(c)
	})
	t.answers.Store(0)
}

// inFlight counts the requests waiting for an answer.
func (t *table) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// company reports whether more than one call waits for its answer.
func (t *table) company() bool { return t.answers.Load() > 1 }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
