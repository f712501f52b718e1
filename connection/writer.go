package connection

import (
	"errors"
	"os"
	"sync"
	"time"
)

// errWriterClosed: the writer no longer takes lines (Close, or a failure).
var errWriterClosed = errors.New("writer closed")

// writer owns the server's stdin. Callers append whole lines to a queue
// and never wait on the pipe; one goroutine writes the queue out in
// batches. A stalled write (a server that stopped reading) therefore never
// holds up a caller's timer, the reader, or the connection actor.
type writer struct {
	f      *os.File
	failed func(error) // called once if a write fails

	mu       sync.Mutex
	queue    []byte
	spare    []byte
	flushed  []chan error // notified when the bytes queued before them are written
	closing  bool         // flush what is queued, then close stdin
	err      error        // set when no more lines are taken
	wake     chan struct{}
	closedCh chan struct{} // closed once stdin is closed
}

func newWriter(f *os.File, failed func(error)) *writer {
	return &writer{f: f, failed: failed, wake: make(chan struct{}, 1), closedCh: make(chan struct{})}
}

// append queues the line(s) built by add. It never blocks on the pipe.
func (w *writer) append(add func([]byte) []byte) error {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return w.err
	}
	w.queue = add(w.queue)
	w.mu.Unlock()
	w.signal()
	return nil
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
	w.queue = add(w.queue)
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
			batch, waiters, closing := w.queue, w.flushed, w.closing
			// Double buffering: callers fill one buffer while this
			// goroutine writes the other.
			w.queue, w.spare, w.flushed = w.spare[:0], nil, nil
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
			_, err := w.f.Write(batch)
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
