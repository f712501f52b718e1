package connection

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/snodo/snodo/internal/telemetry"
)

// errWriterClosed: the writer no longer takes lines (Close, or a failure).
var errWriterClosed = errors.New("writer closed")

// writer owns the server's stdin. Callers never wait on the pipe: when
// nothing else is being written, a caller makes one non-blocking write of
// its line itself (the fast path: no goroutine hand-off); whatever that
// attempt could not write, and every line that arrives while a write is
// under way, goes to a queue that one goroutine writes out in batches. A
// stalled write (a server that stopped reading) therefore never holds up a
// caller's timer, the reader, or the connection actor.
type writer struct {
	f      *os.File
	raw    syscall.RawConn         // for single non-blocking attempts; nil: no fast path
	failed func(error)             // called once if a write fails
	trace  func(Direction, []byte) // Config.Trace; nil: no tracing
	bytes  *telemetry.Conn         // Config.Metrics: bytes written; nil: not counted

	mu       sync.Mutex   // guards the fields below, up to the attempt's
	busy     bool         // a write (direct or by the goroutine) is under way
	direct   []byte       // the fast path's line buffer, reused
	queue    []byte       // lines waiting for the goroutine
	spare    []byte       // the other half of the double buffer
	flushed  []chan error // notified when the bytes queued before them are written
	closing  bool         // flush what is queued, then close stdin
	err      error        // set when no more lines are taken
	wake     chan struct{}
	closedCh chan struct{} // closed once stdin is closed

	// The direct attempt's state, used only by the caller holding busy.
	attempt    func(uintptr) bool // w.attemptOnce, bound once so it does not allocate
	attemptBuf []byte
	attemptN   int
}

func newWriter(f *os.File, failed func(error)) *writer {
	w := &writer{f: f, failed: failed, wake: make(chan struct{}, 1), closedCh: make(chan struct{})}
	if raw, err := f.SyscallConn(); err == nil {
		w.raw = raw
		w.attempt = w.attemptOnce
	}
	return w
}

// append writes or queues the line(s) built by add. It never blocks on
// the pipe.
func (w *writer) append(add func([]byte) []byte) error {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return w.err
	}
	if w.busy || len(w.queue) > 0 || w.raw == nil {
		before := len(w.queue)
		w.queue = add(w.queue)
		if w.trace != nil {
			w.traceSent(w.queue[before:])
		}
		w.mu.Unlock()
		w.signal()
		return nil
	}
	w.busy = true
	line := add(w.direct[:0])
	if w.trace != nil {
		w.traceSent(line)
	}
	w.mu.Unlock()

	n := w.tryWrite(line)
	w.bytes.Written(n)

	w.mu.Lock()
	w.busy = false
	if n < len(line) { // the rest goes first, before lines queued meanwhile
		rest := make([]byte, 0, len(line)-n+len(w.queue))
		w.queue = append(append(rest, line[n:]...), w.queue...)
	}
	if cap(line) <= 64<<10 {
		w.direct = line[:0]
	}
	wake := len(w.queue) > 0 || len(w.flushed) > 0 || w.closing
	w.mu.Unlock()
	if wake {
		w.signal()
	}
	return nil
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
	w.attemptN, _ = syscall.Write(int(fd), w.attemptBuf)
	return true // never wait: a full pipe is the goroutine's business
}

// appendAndWait queues a line and returns a channel that receives the
// result of writing it.
func (w *writer) appendAndWait(add func([]byte) []byte) (<-chan error, error) {
	done := make(chan error, 1)
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return nil, w.err
	}
	before := len(w.queue)
	w.queue = add(w.queue)
	if w.trace != nil {
		w.traceSent(w.queue[before:])
	}
	w.flushed = append(w.flushed, done)
	w.mu.Unlock()
	w.signal()
	return done, nil
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// close stops taking lines; the goroutine flushes what is queued (for at
// most closeFlushTimeout) and closes stdin. It does not wait.
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

func (w *writer) run() {
	defer close(w.closedCh)
	defer w.f.Close()
	for range w.wake {
		for {
			w.mu.Lock()
			if w.busy { // a caller is writing directly; it wakes us after
				w.mu.Unlock()
				break
			}
			batch, waiters, closing := w.queue, w.flushed, w.closing
			// Double buffering: callers fill one buffer while this
			// goroutine writes the other.
			w.queue, w.spare, w.flushed = w.spare[:0], nil, nil
			w.busy = len(batch) > 0
			w.mu.Unlock()
			if len(batch) == 0 && len(waiters) == 0 {
				w.mu.Lock()
				w.spare = batch
				w.mu.Unlock()
				if closing {
					return
				}
				break
			}
			n, err := w.f.Write(batch)
			w.bytes.Written(n)
			w.mu.Lock()
			w.busy = false
			w.mu.Unlock()
			for _, ch := range waiters {
				ch <- err
			}
			if err != nil {
				w.fail(err)
				return
			}
			if cap(batch) <= 1<<20 { // keep a modest buffer for reuse
				w.mu.Lock()
				w.spare = batch[:0]
				w.mu.Unlock()
			}
		}
	}
}

// fail refuses further lines, releases waiters and reports the failure.
func (w *writer) fail(err error) {
	w.mu.Lock()
	wasClosing := w.closing
	w.err = errWriterClosed
	waiters := w.flushed
	w.flushed, w.queue = nil, nil
	w.mu.Unlock()
	for _, ch := range waiters {
		ch <- err
	}
	if !wasClosing {
		w.failed(err)
	}
}
