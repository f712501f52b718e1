package engine

import (
	"errors"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/telemetry"
)

// errWriterClosed: the writer no longer takes lines (Close, or a failure).
var errWriterClosed = errors.New("writer closed")

// errQueueFull: a caller's line would take the bytes waiting to be written
// past Config.MaxWriteQueue.
var errQueueFull = errors.New("write queue full")

// errNotReading: the connection's own lines (answers to server requests,
// refusals, cancellations) would take the bytes waiting to be written past
// twice Config.MaxWriteQueue: the server has stopped reading its stdin.
var errNotReading = errors.New("server is not reading its stdin")

// Line kinds for append: who is waiting on the line, and so which bound
// and which policy at the bound apply.
const (
	// lineCaller: a request or notification from a caller. Refused with
	// errQueueFull past MaxWriteQueue; the caller gets a local error.
	lineCaller = iota
	// lineOwn: a line the connection writes on its own (an answer to a
	// server request, a refusal, a cancellation). Admitted up to twice
	// MaxWriteQueue, so callers filling their share never crowd them out;
	// past that the writer fails with errNotReading and the connection
	// stops: a server that asks but never reads cannot grow memory.
	lineOwn
)

const (
	batchBytes   = 64 << 10 // what the goroutine takes per write: a pipe's worth
	compactBytes = 64 << 10 // waste in the queue that makes it compact
	keepBytes    = 1 << 20  // buffers larger than this are not kept when empty
)

// writer owns the server's stdin. Callers never wait on the pipe: when
// nothing else is being written and no other request is in flight, a
// caller makes one non-blocking write of its line itself (the fast path:
// no goroutine hand-off; see company for the other case); whatever that
// attempt could not write, and every line that arrives while a write is
// under way, goes to a queue that one goroutine writes out in batches of
// about a pipe's worth (its first round made, when it can be without
// waiting, by the caller that would start it: flushInline). That
// goroutine runs only while there is something to write: started by the
// first line queued, it exits once the queue is empty (or a direct write
// is under way, whose caller starts it again if lines are left), so an
// idle connection has no writer goroutine. A stalled write (a server that
// stopped reading) therefore never holds up a caller's timer, the reader,
// or the connection actor.
//
// The queue is bounded in bytes (see lineCaller, lineOwn), and a line
// still in the queue can be dropped by its caller (drop): a request that
// timed out or was cancelled before it was written is never written, and
// its bytes are given back. Only the batch being written (at most about
// batchBytes, or one line) is out of reach.
type writer struct {
	f      *os.File
	raw    syscall.RawConn                    // for single non-blocking attempts; nil: no fast path
	failed func(error)                        // called once if a write fails or the server stops reading
	trace  func(connection.Direction, []byte) // Config.Trace; nil: no tracing
	bytes  *telemetry.Conn                    // Config.Metrics: bytes written; nil: not counted
	max    int                                // Config.MaxWriteQueue
	// beforeClose, when set, is called just before stdin is closed: the
	// last moment the pipe can be looked at.
	beforeClose func()
	// company reports whether other requests are in flight; nil: never.
	// With company, a caller queues its line instead of writing it itself:
	// the answers to the others are arriving, each waking a caller that
	// will queue a line of its own, so one write(2) soon carries them all.
	// Alone, a caller writes directly (no hand-off, the lowest latency).
	company func() bool

	written atomic.Int64 // bytes that reached the pipe
	// queued counts the lines ever put in the queue (the direct path's
	// excepted): gather watches it to tell whether callers are still
	// arriving.
	queued atomic.Uint64

	mu      sync.Mutex // guards the fields below, up to the attempt's
	busy    bool       // a write (direct or by the goroutine) is under way
	direct  []byte     // the fast path's line buffer, reused
	queue   []byte     // queue[head:] holds the segments segs[segHead:], in order
	head    int
	segs    []segment
	segHead int
	live    int // bytes of queued lines not dropped
	ownLive int // of which the connection's own lines (lineOwn)
	dead    int // bytes of dropped lines still in queue[head:]
	// taken counts the bytes of every line taken, in the order they go to
	// the wire (dropped lines included): a line's ticket is taken+1 as it
	// is appended, so tickets increase (every line has bytes) and say
	// where the line would start in the stream, were no line before it
	// dropped (see stream).
	taken   uint64
	dropped uint64 // bytes of every line ever dropped
	writing int    // bytes of the write under way (while busy)
	// idle, when not nil, is closed as the write under way ends (stream
	// waits on it).
	idle    chan struct{}
	closing bool  // flush what is queued, then close stdin
	err     error // set when no more lines are taken
	running bool  // the goroutine (run) is started and has not decided to exit
	// runFn is w.run, bound once so that starting the goroutine does not
	// allocate.
	runFn func()
	// closedCh is closed once stdin is closed.
	closedCh chan struct{}

	batch []byte // the goroutine's copy of what it writes; only it uses it

	// The direct attempt's state, used only by the caller holding busy.
	attempt    func(uintptr) bool // w.attemptOnce, bound once so it does not allocate
	attemptBuf []byte
	attemptN   int
}

// segment is one queued line (or the unwritten rest of a direct write).
type segment struct {
	n       int
	ticket  uint64
	pinned  bool       // partly written already: cannot be dropped
	own     bool       // a lineOwn line: counted in ownLive
	dropped bool       // its caller gave up: skipped, never written
	done    chan error // notified once written (appendAndWait); nil: nobody waits
}

func newWriter(f *os.File, max int, failed func(error)) *writer {
	w := &writer{f: f, max: max, failed: failed, closedCh: make(chan struct{})}
	w.runFn = w.run
	if raw, err := f.SyscallConn(); err == nil && directWrites {
		w.raw = raw
		w.attempt = w.attemptOnce
	}
	return w
}

// append writes or queues the line built by add, of the given kind, and
// returns its ticket (for drop). It never blocks on the pipe. add runs
// under the writer's lock, appending straight into the queue: no copy,
// whatever the line's size.
func (w *writer) append(kind int, add func([]byte) []byte) (uint64, error) {
	return w.appendLine(kind, add, nil, nil)
}

// appendBuilt is append for a line the caller has built already, in a
// buffer of its own that it may reuse once appendBuilt returns. Building
// outside the lock keeps the lock short when many callers append at once;
// the line is copied into the queue (or written straight from line).
func (w *writer) appendBuilt(kind int, line []byte) (uint64, error) {
	return w.appendLine(kind, nil, line, nil)
}

// appendAndWait queues the line built by add and returns its ticket and a
// channel that receives the result of writing it.
func (w *writer) appendAndWait(add func([]byte) []byte) (uint64, <-chan error, error) {
	done := make(chan error, 1)
	t, err := w.appendLine(lineCaller, add, nil, done)
	if err != nil {
		return 0, nil, err
	}
	return t, done, nil
}

// appendLine appends the line add builds or, when add is nil, built.
func (w *writer) appendLine(kind int, add func([]byte) []byte, built []byte, done chan error) (uint64, error) {
	w.mu.Lock()
	if err := w.err; err != nil {
		w.mu.Unlock()
		return 0, err // read under mu: fail sets it
	}
	t := w.taken + 1
	if w.busy || w.live > 0 || w.raw == nil || done != nil || (w.company != nil && w.company()) {
		if err := w.admit(kind, 0); err != nil { // full already: do not build the line
			w.mu.Unlock()
			if err == errNotReading {
				w.fail(err)
			}
			return 0, err
		}
		before := len(w.queue)
		if add != nil {
			w.queue = add(w.queue)
		} else {
			w.queue = append(w.queue, built...)
		}
		n := len(w.queue) - before
		if err := w.admit(kind, n); err != nil {
			w.queue = w.queue[:before]
			w.mu.Unlock()
			if err == errNotReading {
				w.fail(err)
			}
			return 0, err
		}
		w.segs = append(w.segs, segment{n: n, ticket: t, done: done, own: kind == lineOwn})
		w.queued.Add(1)
		w.live += n
		if kind == lineOwn {
			w.ownLive += n
		}
		w.taken += uint64(n)
		if w.trace != nil {
			w.traceSent(w.queue[before:])
		}
		start := w.startLocked()
		w.mu.Unlock()
		if start && (done != nil || w.raw == nil || !w.flushInline()) {
			go w.runFn()
		}
		return t, nil
	}
	w.busy = true
	line := built
	if add != nil {
		line = add(w.direct[:0])
	}
	w.taken += uint64(len(line))
	w.writing = len(line)
	if w.trace != nil {
		w.traceSent(line)
	}
	w.attemptLocked(line, t, kind == lineOwn)
	if add != nil && cap(line) <= batchBytes {
		w.direct = line[:0]
	}
	start := (w.live > 0 || w.closing) && w.startLocked()
	w.mu.Unlock()
	if start {
		go w.runFn()
	}
	return t, nil
}

// admit applies the bound to a line of n bytes of the given kind. A line
// is always admitted into an empty queue, however long. The callers'
// lines count for at most the bound against the connection's own: one
// caller's line admitted alone, however long (and still being written,
// the server reading it slowly or not at all), is that caller's, and
// cannot make the connection take the server for one that stopped
// reading the connection's own lines (the cancellation of that very
// request, say).
func (w *writer) admit(kind int, n int) error {
	if w.live == 0 {
		return nil
	}
	switch {
	case kind == lineCaller && (w.live+n > w.max || w.live >= w.max):
		return errQueueFull
	case kind == lineOwn:
		waiting := min(w.live-w.ownLive, w.max) + w.ownLive
		if waiting+n > 2*w.max || waiting >= 2*w.max {
			return errNotReading
		}
	}
	return nil
}

// pushFront puts the unwritten rest of a direct write before everything
// queued. The caller holds mu.
func (w *writer) pushFront(rest []byte, t uint64, own bool) {
	n := len(rest)
	if w.head >= n {
		w.head -= n
		copy(w.queue[w.head:], rest)
	} else {
		q := make([]byte, 0, n+len(w.queue)-w.head)
		w.queue = append(append(q, rest...), w.queue[w.head:]...)
		w.head = 0
	}
	s := segment{n: n, ticket: t, pinned: true, own: own}
	if w.segHead > 0 {
		w.segHead--
		w.segs[w.segHead] = s
	} else {
		w.segs = append(w.segs, segment{})
		copy(w.segs[1:], w.segs)
		w.segs[0] = s
	}
	w.live += n
	if own {
		w.ownLive += n
	}
}

// drop removes the line with ticket t from the queue if it has not begun
// to be written, and reports whether it did: that line will never reach
// the server. Its bytes no longer count against the bound.
func (w *writer) drop(t uint64) bool {
	if t == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.segs[w.segHead:]
	i := sort.Search(len(q), func(i int) bool { return q[i].ticket >= t })
	if i == len(q) || q[i].ticket != t || q[i].pinned || q[i].dropped {
		return false
	}
	q[i].dropped = true
	w.live -= q[i].n
	if q[i].own {
		w.ownLive -= q[i].n
	}
	w.dropped += uint64(q[i].n)
	w.dead += q[i].n
	w.compact()
	return true
}

// compact moves the live lines to the front of the queue once enough of
// it is waste (written or dropped lines), and lets a large buffer go once
// it is empty, so memory follows what waits, not what once waited. The
// goroutine never holds a slice of the queue (it copies its batch out), so
// moving bytes in place is safe. The caller holds mu.
func (w *writer) compact() {
	if w.live == 0 {
		w.segs, w.segHead, w.head, w.dead = w.segs[:0], 0, 0, 0
		w.queue = w.queue[:0]
		if cap(w.queue) > keepBytes {
			w.queue = nil
		}
		if cap(w.segs) > 4096 {
			w.segs = nil
		}
		return
	}
	waste := w.head + w.dead
	small := cap(w.queue) > keepBytes && 4*w.live < cap(w.queue)
	if !small && (waste < compactBytes || 2*waste < len(w.queue)) {
		return
	}
	to := w.queue[:0]
	if small { // a storm has passed: let its buffer go
		to = make([]byte, 0, 2*w.live)
	}
	pos := w.head
	kept := w.segs[:0]
	for _, s := range w.segs[w.segHead:] {
		if !s.dropped {
			to = append(to, w.queue[pos:pos+s.n]...) // in place: to never overtakes pos
			kept = append(kept, s)
		}
		pos += s.n
	}
	clear(w.segs[len(kept):]) // let the done channels go
	w.queue, w.segs = to, kept
	w.head, w.segHead, w.dead = 0, 0, 0
}

// take copies the next batch out of the queue into w.batch: whole lines,
// at least one, up to about batchBytes; dropped lines are skipped. It
// returns the channels to notify once the batch is written. The caller
// holds mu.
func (w *writer) take() (waiters []chan error) {
	w.batch = w.batch[:0]
	pos := w.head
	i := w.segHead
	for ; i < len(w.segs) && len(w.batch) < batchBytes; i++ {
		s := &w.segs[i]
		if s.dropped {
			w.dead -= s.n
		} else {
			w.batch = append(w.batch, w.queue[pos:pos+s.n]...)
			w.live -= s.n
			if s.own {
				w.ownLive -= s.n
			}
			if s.done != nil {
				waiters = append(waiters, s.done)
			}
		}
		pos += s.n
		*s = segment{}
	}
	w.head, w.segHead = pos, i
	w.compact()
	return waiters
}

// tryWrite makes one non-blocking write attempt and returns how many bytes
// went out (0 when the pipe is full or the write failed: the goroutine
// then retries and reports a failure). Only the caller holding busy calls
// it, so the attempt's fields need no lock.
func (w *writer) tryWrite(b []byte) int {
	w.attemptBuf, w.attemptN = b, 0
	err := w.raw.Write(w.attempt)
	w.attemptBuf = nil
	if err != nil || w.attemptN < 0 {
		return 0
	}
	return w.attemptN
}

// attemptOnce is the raw write behind tryWrite, allocated once.
func (w *writer) attemptOnce(fd uintptr) bool {
	w.attemptN, _ = rawWrite(fd, w.attemptBuf)
	return true // never wait: a full pipe is the goroutine's business
}

// signal starts the goroutine unless it runs already; one that runs
// takes every line queued before it decides to exit (under mu).
func (w *writer) signal() {
	w.mu.Lock()
	start := w.startLocked()
	w.mu.Unlock()
	if start {
		go w.runFn()
	}
}

// startLocked marks the goroutine running and reports whether the caller
// must start it (it was not running). The caller holds mu.
func (w *writer) startLocked() bool {
	start := !w.running
	w.running = true
	return start
}

// close stops taking lines; the goroutine (started if it is not running)
// flushes what is queued (for at most closeFlushTimeout) and closes stdin.
// It does not wait.
func (w *writer) close() {
	w.mu.Lock()
	w.closing = true
	if w.err == nil {
		w.err = errWriterClosed
	}
	w.mu.Unlock()
	// Bound the final flush, including a write already stalled on a server
	// that stopped reading: it must not keep Close waiting.
	_ = w.f.SetWriteDeadline(time.Now().Add(closeFlushTimeout))
	w.signal()
}

// run writes batches until the queue is empty, then exits (closing stdin
// first if the writer is closing). Started by signal; at most one runs.
func (w *writer) run() {
	for {
		// Started by the first of a burst of lines (callers the reader
		// just woke), or back from a write during which more came: let
		// the others run and queue theirs first, so that the batch below
		// takes them all in one write(2).
		w.gather()
		w.mu.Lock()
		if w.busy { // a caller is writing directly; it starts us again after
			w.running = false
			w.mu.Unlock()
			return
		}
		waiters := w.take()
		batch, closing := w.batch, w.closing
		w.busy, w.writing = len(batch) > 0, len(batch)
		if len(batch) == 0 && !closing {
			w.running = false
		}
		w.mu.Unlock()
		if len(batch) == 0 {
			if closing {
				w.lastLook()
				w.f.Close()
				close(w.closedCh)
			}
			return
		}
		n, err := w.f.Write(batch)
		w.bytes.Written(n)
		w.written.Add(int64(n))
		if cap(w.batch) > keepBytes {
			w.batch = nil
		}
		w.mu.Lock()
		w.idleLocked()
		w.mu.Unlock()
		for _, ch := range waiters {
			ch <- err
		}
		if err != nil {
			w.fail(err)
			w.lastLook()
			w.f.Close()
			close(w.closedCh)
			return
		}
	}
}

// flushInline does the goroutine's first round on the goroutine of the
// caller that would start it, without waiting on the pipe: it yields
// once (as run does, so that the callers woken with this one queue
// theirs), takes the batch and makes one non-blocking write of it. It
// reports whether that was all; false: the goroutine must run (the
// caller holds its role, running) for what the pipe did not take, the
// lines queued meanwhile, a line someone waits on, or the close.
//
// A burst of requests then costs no goroutine started and ended, and no
// hand-off to one. What the pipe did not take goes back first in the
// queue, pinned: it was taken, as the goroutine's batch is, and can no
// longer be dropped (counted as callers' bytes, the bound's stricter
// share).
func (w *writer) flushInline() bool {
	w.gather()
	w.mu.Lock()
	if w.busy || w.closing || w.err != nil || w.live == 0 || w.awaited() {
		w.mu.Unlock()
		return false
	}
	w.take() // no waiters: awaited
	batch := w.batch
	w.busy, w.writing = true, len(batch)
	w.attemptLocked(batch, 0, false)
	if cap(w.batch) > keepBytes {
		w.batch = nil
	}
	if w.live > 0 || w.closing {
		w.mu.Unlock()
		return false
	}
	w.running = false
	w.mu.Unlock()
	return true
}

// maxGatherYields bounds how long gather lets callers arrive: a line
// waits for at most this many turns of the scheduler before it is
// written, however busy the connection.
const maxGatherYields = 8

// gather lets the callers that are about to queue a line do so before a
// batch is taken, so that one write(2) carries the burst the reader has
// just woken (each of them answered at once) instead of many small
// writes, each one also a wake-up of the server's reader. With company
// (other requests in flight: more lines are likely on their way) it
// yields, and yields again while the yield brought new lines, up to
// maxGatherYields times or a batch's worth of bytes: it stops as soon as
// a turn of the scheduler brings nothing, which is when the queue is
// flushed, as a hand-tuned writer does. Alone, it does not wait: a lone
// request is written at once.
func (w *writer) gather() {
	if w.company == nil || !w.company() {
		return
	}
	seen := w.queued.Load()
	for range maxGatherYields {
		runtime.Gosched()
		now := w.queued.Load()
		if now == seen {
			return
		}
		seen = now
		w.mu.Lock()
		full := w.live >= batchBytes
		w.mu.Unlock()
		if full {
			return
		}
	}
}

// attemptLocked makes the one non-blocking write of b that the caller
// holding busy is allowed (the direct path's line, flushInline's batch):
// it lets go of mu for the write, then ends the write under way and puts
// what the pipe did not take first in the queue, pinned, with ticket t
// (0: none to drop it by) and counted as the connection's own when own.
// The caller holds mu, and holds it again on return.
func (w *writer) attemptLocked(b []byte, t uint64, own bool) {
	w.mu.Unlock()
	n := w.tryWrite(b)
	w.bytes.Written(n)
	w.written.Add(int64(n))
	w.mu.Lock()
	w.idleLocked()
	if n < len(b) { // the rest goes first, before lines queued meanwhile
		w.pushFront(b[n:], t, own)
	}
}

// awaited reports whether a queued line has a caller waiting for its
// write (appendAndWait): only the goroutine writes those. The caller
// holds mu.
func (w *writer) awaited() bool {
	for _, s := range w.segs[w.segHead:] {
		if s.done != nil && !s.dropped {
			return true
		}
	}
	return false
}

// lastLook calls beforeClose, if set.
func (w *writer) lastLook() {
	if w.beforeClose != nil {
		w.beforeClose()
	}
}

// idleLocked ends the write under way. The caller holds mu.
func (w *writer) idleLocked() {
	w.busy, w.writing = false, 0
	if w.idle != nil {
		close(w.idle)
		w.idle = nil
	}
}

// stream says how far the stream to stdin has gone, once the write under
// way, if any, has ended (it waits for at most wait): written is at least
// the bytes that reached the pipe (those counted, plus the whole of a
// write still under way, which may have gone out uncounted yet), and
// dropped the bytes of the lines dropped so far. The line with ticket t
// starts at byte t-1 of the stream less the bytes dropped before it, so
// at least t-1-dropped for a line written by now (the lines before it
// were written or dropped first).
//
// It waits until no write is under way, not only for the one under way as
// it is called: another may start as that one ends (a caller's direct
// write, say), and counting it whole would count its line as read. Once
// nobody reads the pipe every write fails at once, so the wait is short.
func (w *writer) stream(wait time.Duration) (written, dropped int64) {
	deadline := time.Now().Add(wait)
	w.mu.Lock()
	for w.busy {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if w.idle == nil {
			w.idle = make(chan struct{})
		}
		idle := w.idle
		w.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-idle:
		case <-t.C:
		}
		t.Stop()
		w.mu.Lock()
	}
	defer w.mu.Unlock()
	return w.written.Load() + int64(w.writing), int64(w.dropped)
}

// fail refuses further lines, releases waiters and reports the failure.
func (w *writer) fail(err error) {
	w.mu.Lock()
	wasClosing, wasFailed := w.closing, w.err != nil
	w.err = errWriterClosed
	var waiters []chan error
	for _, s := range w.segs[w.segHead:] {
		if s.done != nil && !s.dropped {
			waiters = append(waiters, s.done)
		}
	}
	w.segs, w.segHead, w.queue, w.head, w.live, w.ownLive, w.dead = nil, 0, nil, 0, 0, 0, 0
	w.mu.Unlock()
	for _, ch := range waiters {
		ch <- err
	}
	if !wasClosing && !wasFailed {
		w.failed(err) // the connection stops, and its stop closes us
	}
}
