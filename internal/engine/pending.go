package engine

import (
	"encoding/json"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/internal/callerrun"
)

// maxQueuedProgress bounds the progress updates waiting for a slow caller;
// past it the newest update replaces the last queued one, so a progress
// flood cannot grow memory (progress is cumulative: the latest subsumes).
const maxQueuedProgress = 64

// maxQueuedProgressBytes bounds the messages of the progress updates
// waiting for a slow caller, with the same policy past it: long messages
// cannot make a request keep maxQueuedProgress lines' worth of them.
const maxQueuedProgressBytes = 1 << 20

// call is one request waiting for its answer. Its fields are guarded by
// the table's mutex; wake is signalled whenever there is news for the
// caller (progress, the answer, or a deadline passed). done is also
// atomic: a caller without progress reads its answer without the lock.
type call struct {
	wake   chan struct{} // capacity 1
	id     int64         // the request's ID while it is in the table
	ticket uint64        // the request line's ticket in the writer (for drop)
	line   []byte        // the request line, built before it is handed to the writer; reused
	// lineBuf is line's first buffer, allocated with the call: a common
	// request line fits, so a new call costs no allocation for it.
	lineBuf [512]byte

	done   atomic.Bool // result and err are set, and the call is out of the table
	result json.RawMessage
	err    error

	// Deadlines, on the table's clock (monoNow); 0: none. deadline is the
	// timeout (moved on by progress when asked), total the cap on the
	// whole wait. expired says which one the table's timer found passed.
	deadline, total int64
	expired         expiry
	// failed is why the call ended on the reader's side, with expired
	// set to streamFailed: its Stream callback panicked.
	failed error

	wantProgress  bool
	progress      []Progress
	progressBytes int // the bytes of the queued updates' messages

	// serverEnded: the server has ended this stream (its
	// notifications/cancelled is being delivered, and the request will be
	// completed next): a caller giving up meanwhile sends no cancel.
	serverEnded bool

	// runner is the request's exchange while its caller runs it
	// (runHere), interrupted when a deadline passes or the table closes
	// so that the caller, busy in it, gives up in time; nil otherwise.
	// Guarded by the shard's lock.
	runner callerrun.Runner
	// cancelled: the runner, interrupted, told the server the request
	// is cancelled; giving up sends no notifications/cancelled then.
	cancelled bool

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
	// streamFailed: not a deadline, but the caller gives up the same way
	// (giveUp) and returns call.failed: the Stream callback panicked.
	streamFailed
)

// due is the call's earliest deadline, 0 for none.
func (cl *call) due() int64 {
	if cl.total != 0 && (cl.deadline == 0 || cl.total < cl.deadline) {
		return cl.total
	}
	return cl.deadline
}

// maxKeptLine is the largest line buffer a pooled call keeps.
const maxKeptLine = 4 << 10

// calls are pooled: a call and its wake channel are reused by later
// requests, so a request allocates neither.
var callPool = sync.Pool{New: func() any {
	c := &call{wake: make(chan struct{}, 1)}
	c.line = c.lineBuf[:0]
	return c
}}

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
	cl.result, cl.err, cl.progress, cl.progressBytes, cl.wantProgress, cl.ticket = nil, nil, nil, 0, false, 0
	if cap(cl.line) > maxKeptLine {
		cl.line = cl.lineBuf[:0]
	}
	cl.deadline, cl.total, cl.expired, cl.serverEnded, cl.failed = 0, 0, notExpired, false, nil
	cl.runner, cl.cancelled = nil, false
	callPool.Put(cl)
}

// clockBase anchors monoNow, the monotonic clock deadlines are kept on.
var clockBase = time.Now()

func monoNow() int64 { return int64(time.Since(clockBase)) }

// after is the deadline d from now on the table's clock; 0 for d <= 0.
// A d too long to add to now (time.Duration's longest, as a remote host
// may pass on) is the latest deadline there is, never one that wrapped
// around into the past: that would have failed its call at once, and,
// looking earlier than every other deadline, kept the timer from firing
// for the rest.
func after(now int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	if int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// table is the connection's one table of requests in flight. It is owned
// by the Conn: callers add and abandon their own entries, the reader
// completes them, and the actor fails them all when the connection stops.
//
// The calls are kept in a ring of slots indexed by ID: IDs are handed out
// in order, so the calls in flight at once almost always land in free
// slots, and finding one is an index, not a hash. A call whose slot is
// still taken (by a request, such as a subscription, outliving the next
// tableSlots IDs) goes to its shard's map instead. The ring is cut into
// shards by the low bits of the ID, each with its own lock: consecutive
// requests, and a caller adding its request while the reader completes
// another, take different locks.
//
// Timeouts: one timer per table, not one per request. It is armed for the
// earliest deadline of the calls in flight (or, when that call has
// finished since, for a moment when nothing is due: it then re-arms for
// the earliest deadline left). With one timeout for every request, a new
// request's deadline is never the earliest, so a request costs no timer
// operation at all; the timer fires about once per timeout, and each
// firing looks at every call in flight.
type table struct {
	nextID atomic.Int64
	shards [tableShards]shard

	n atomic.Int64 // calls in the table
	// answers counts the callers of one answer (streams, which stay for
	// as long as a subscription, do not count) from add until they
	// release their call: those waiting, and those the reader has just
	// handed their answer, who are about to return and, often, send
	// again. So a burst of callers the reader has woken together still
	// counts as company (see company) while the first of them sends.
	answers atomic.Int64
	// closed is the error close fails everything with, set once as close
	// begins (before it takes any shard's lock): add checks it under its
	// shard's lock, so a request added after a caller has seen that
	// error, or to a shard close has been through, is refused.
	closed atomic.Pointer[error]

	timerMu sync.Mutex   // guards timer; held while arming and expiring
	timer   *time.Timer  // runs expire; nil until a call has a deadline
	armed   atomic.Int64 // when the timer fires (monoNow); 0: not armed

	// gaveUp holds the IDs of the last maxGaveUp requests the client
	// gave up on (abandon: a cancelled ctx, a timeout, a Stream callback
	// that panicked), so that what the server still sends for them is
	// told apart from what it sends for requests never made. It is
	// allocated at the first give-up: an idle connection keeps none.
	gaveUpMu   sync.Mutex
	gaveUp     *[maxGaveUp]int64
	gaveUpNext int
}

// maxGaveUp bounds the IDs of requests given up that a table remembers
// (2 KiB): past it the oldest is forgotten, and the server's notifications
// for it count as for an unknown request.
const maxGaveUp = 256

// shard is one part of the table: the calls whose IDs share its low bits.
// Its slots are allocated when its first call is filed, so an idle
// connection holds only the shards its few requests used.
type shard struct {
	mu       sync.Mutex
	slots    *[shardSlots]*call // nil until a call was filed here
	overflow map[int64]*call    // calls whose slot was taken; nil until one was
}

const (
	// tableSlots is the size of the table's ring: a power of two, and
	// more than the calls most connections have in flight at once.
	tableSlots  = 256
	tableShards = 16 // a power of two
	shardSlots  = tableSlots / tableShards
	shardBits   = 4 // log2(tableShards)
)

func newTable() *table { return &table{} }

func (t *table) shardOf(id int64) *shard { return &t.shards[id&(tableShards-1)] }

// put files c under id. The caller holds s.mu.
func (s *shard) put(id int64, c *call) {
	c.id = id
	if s.slots == nil {
		s.slots = new([shardSlots]*call)
	}
	if p := &s.slots[(id>>shardBits)&(shardSlots-1)]; *p == nil {
		*p = c
		return
	}
	if s.overflow == nil {
		s.overflow = make(map[int64]*call)
	}
	s.overflow[id] = c
}

// lookup finds the call filed under id, nil when none is. The caller
// holds s.mu.
func (s *shard) lookup(id int64) *call {
	if s.slots == nil {
		return nil // nothing was ever filed here
	}
	if c := s.slots[(id>>shardBits)&(shardSlots-1)]; c != nil && c.id == id {
		return c
	}
	if len(s.overflow) > 0 {
		return s.overflow[id]
	}
	return nil
}

// remove takes c, filed under c.id, out of the shard and reports whether
// it was there. The caller holds s.mu.
func (s *shard) remove(c *call) bool {
	if s.slots == nil {
		return false
	}
	if p := &s.slots[(c.id>>shardBits)&(shardSlots-1)]; *p == c {
		*p = nil
		return true
	}
	if s.overflow[c.id] == c {
		delete(s.overflow, c.id)
		return true
	}
	return false
}

// each calls fn for every call in the shard; fn may remove the call it
// is given. The caller holds s.mu.
func (s *shard) each(fn func(*call)) {
	if s.slots != nil {
		for _, c := range s.slots {
			if c != nil {
				fn(c)
			}
		}
	}
	for _, c := range s.overflow {
		fn(c)
	}
}

// removed accounts for c leaving the table.
func (t *table) removed(*call) {
	t.n.Add(-1)
}

// release returns c, added to the table and out of it again (answered,
// abandoned, or failed by close), to the pool: its caller is done.
func (t *table) release(c *call) {
	if c.stream == nil {
		t.answers.Add(-1)
	}
	c.release()
}

// add registers c under a fresh id with its deadlines (0: none). IDs
// increase and are never reused.
func (t *table) add(c *call, deadline, total int64) (int64, error) {
	id := t.nextID.Add(1)
	c.deadline, c.total = deadline, total
	s := t.shardOf(id)
	s.mu.Lock()
	if err := t.closed.Load(); err != nil {
		s.mu.Unlock()
		return 0, *err
	}
	s.put(id, c)
	t.n.Add(1)
	if c.stream == nil {
		t.answers.Add(1)
	}
	due := c.due()
	s.mu.Unlock()
	if due != 0 {
		if armed := t.armed.Load(); armed == 0 || due < armed {
			t.timerMu.Lock()
			if armed := t.armed.Load(); (armed == 0 || due < armed) && t.closed.Load() == nil {
				t.arm(due)
			}
			t.timerMu.Unlock()
		}
	}
	return id, nil
}

// arm sets the timer to fire at the deadline at. The caller holds timerMu.
func (t *table) arm(at int64) {
	d := time.Duration(at - monoNow())
	if t.timer == nil {
		t.timer = time.AfterFunc(d, t.expire)
	} else {
		t.timer.Reset(d)
	}
	t.armed.Store(at)
}

// expire runs on the timer: it marks every call whose deadline passed
// and wakes its caller (who gives up, unless the answer wins the race),
// and re-arms for the earliest deadline still ahead. A call added
// meanwhile with an earlier deadline re-arms the timer itself once
// expire is done (add checks armed under timerMu).
func (t *table) expire() {
	t.timerMu.Lock()
	defer t.timerMu.Unlock()
	if t.closed.Load() != nil {
		return
	}
	t.armed.Store(0)
	now := monoNow()
	var next int64
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.each(func(c *call) {
			due := c.due()
			switch {
			case due == 0 || c.expired != notExpired:
			case due <= now:
				c.expired = timeoutExpired
				if due == c.total {
					c.expired = totalExpired
				}
				if c.runner != nil {
					c.runner.Interrupt()
				}
				signal(c.wake)
			case next == 0 || due < next:
				next = due
			}
		})
		s.mu.Unlock()
	}
	if next != 0 {
		if armed := t.armed.Load(); armed == 0 || next < armed {
			t.arm(next)
		}
	}
}

// extend moves c's timeout to deadline (progress arrived), unless the
// cap on the whole wait has passed.
func (t *table) extend(c *call, deadline int64) {
	s := t.shardOf(c.id)
	s.mu.Lock()
	c.deadline = deadline
	if c.expired == timeoutExpired {
		c.expired = notExpired
	}
	due := c.due()
	s.mu.Unlock()
	if due == 0 {
		return
	}
	t.timerMu.Lock()
	if armed := t.armed.Load(); (armed == 0 || due < armed) && t.closed.Load() == nil {
		t.arm(due)
	}
	t.timerMu.Unlock()
}

// complete delivers the answer to id; false when no such request waits.
func (t *table) complete(id int64, result json.RawMessage, err error) bool {
	s := t.shardOf(id)
	s.mu.Lock()
	c := s.lookup(id)
	if c == nil {
		s.mu.Unlock()
		return false
	}
	s.remove(c)
	t.removed(c)
	c.result, c.err = result, err
	c.done.Store(true)
	s.mu.Unlock()
	signal(c.wake) // outside the lock: the caller it wakes may take it at once
	return true
}

// progress queues a progress update for id; false when nobody wants it.
func (t *table) progress(id int64, p Progress) bool {
	s := t.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookup(id)
	if c == nil || !c.wantProgress {
		return false
	}
	if n := len(c.progress); n == 0 || n < maxQueuedProgress && c.progressBytes+len(p.Message) <= maxQueuedProgressBytes {
		c.progress = append(c.progress, p)
		c.progressBytes += len(p.Message)
	} else { // progress is cumulative: the newest subsumes the last
		c.progressBytes += len(p.Message) - len(c.progress[n-1].Message)
		c.progress[n-1] = p
	}
	signal(c.wake)
	return true
}

// streamOf returns the stream sink of request id, or nil. With nil, ended
// tells whether id is a request the client has ended itself: one given up
// (remembered by abandon) or whose sink has panicked (it is not called
// again, and its caller is giving the request up).
func (t *table) streamOf(id int64) (sink func(string, json.RawMessage), ended bool) {
	s := t.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.lookup(id); c != nil {
		if c.expired == streamFailed {
			return nil, true
		}
		return c.stream, false
	}
	return nil, t.gaveUpOn(id)
}

// gaveUpOn reports whether id is among the last maxGaveUp requests the
// client gave up on.
func (t *table) gaveUpOn(id int64) bool {
	t.gaveUpMu.Lock()
	defer t.gaveUpMu.Unlock()
	if t.gaveUp == nil {
		return false
	}
	for _, g := range t.gaveUp {
		if g == id {
			return id != 0
		}
	}
	return false
}

// fail marks request id as failed with err and wakes its caller, who
// gives it up as at a timeout (the server is told) and returns err. It
// does nothing when the request is no longer in the table.
func (t *table) fail(id int64, err error) {
	s := t.shardOf(id)
	s.mu.Lock()
	c := s.lookup(id)
	if c != nil {
		c.expired, c.failed = streamFailed, err
	}
	s.mu.Unlock()
	if c != nil {
		signal(c.wake)
	}
}

// endStream marks stream request id as ended by the server and returns
// its sink, or nil when id is no stream in the table. The caller delivers
// the server's cancellation to the sink, then completes the request; a
// caller giving up in between (the sink may cancel its ctx) finds it
// ended and waits for that completion instead of cancelling it.
func (t *table) endStream(id int64) func(string, json.RawMessage) {
	s := t.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.lookup(id); c != nil && c.stream != nil {
		c.serverEnded = true
		return c.stream
	}
	return nil
}

// take hands the caller its queued progress, whether the answer is in,
// and which deadline passed, if any.
func (t *table) take(c *call) (progress []Progress, done bool, expired expiry) {
	s := t.shardOf(c.id)
	s.mu.Lock()
	defer s.mu.Unlock()
	progress, c.progress, c.progressBytes = c.progress, nil, 0
	return progress, c.done.Load(), c.expired
}

// abandon removes id unless its answer already arrived (or, for a
// stream the server ended, is arriving); it reports whether the caller
// gave up first (and so must tell the server). The table remembers id
// (gaveUpOn): the server may still send notifications for it, and those
// are dropped as late rather than as for an unknown request.
func (t *table) abandon(id int64, c *call) bool {
	s := t.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.done.Load() || c.serverEnded {
		return false
	}
	if s.remove(c) {
		t.removed(c)
		t.gaveUpMu.Lock()
		if t.gaveUp == nil {
			t.gaveUp = new([maxGaveUp]int64)
		}
		t.gaveUp[t.gaveUpNext] = id
		t.gaveUpNext = (t.gaveUpNext + 1) % maxGaveUp
		t.gaveUpMu.Unlock()
	}
	return true
}

// running records r as the exchange of request id that its caller runs
// (runHere), or interrupts it at once when a deadline of the call has
// passed already or the call is out of the table.
func (t *table) running(id int64, c *call, r callerrun.Runner) {
	s := t.shardOf(id)
	s.mu.Lock()
	live := c.expired == notExpired && !c.done.Load()
	if live {
		c.runner = r
	}
	s.mu.Unlock()
	if !live {
		r.Interrupt()
	}
}

// ran ends running: the caller's run is over; cancelled says it told the
// server the request is cancelled.
func (t *table) ran(id int64, c *call, cancelled bool) {
	s := t.shardOf(id)
	s.mu.Lock()
	c.runner, c.cancelled = nil, cancelled
	s.mu.Unlock()
}

// close fails every waiting request with err and refuses new ones.
func (t *table) close(err error) {
	if !t.closed.CompareAndSwap(nil, &err) {
		return
	}
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.each(func(c *call) {
			s.remove(c) // first: once done, its caller may reuse c
			t.removed(c)
			if c.runner != nil {
				c.runner.Interrupt()
			}
			c.err = err
			c.done.Store(true)
			signal(c.wake)
		})
		s.mu.Unlock()
	}
	t.timerMu.Lock()
	if t.timer != nil {
		t.timer.Stop()
	}
	t.armed.Store(0)
	t.timerMu.Unlock()
}

// inFlight counts the requests waiting for an answer.
func (t *table) inFlight() int { return int(t.n.Load()) }

// company reports whether more than one caller waits for its answer or
// is about to return with it.
func (t *table) company() bool { return t.answers.Load() > 1 }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
