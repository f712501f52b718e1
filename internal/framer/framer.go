// Package framer splits a byte stream into newline-delimited lines
// within a bound: the one line reader of every transport that carries
// JSON-RPC as lines (a stdio server's stdout, an in-memory server's
// output) and of the SSE parser of both HTTP transports.
package framer

import (
	"bytes"
	"io"
	"syscall"

	"github.com/snodo/snodo/internal/telemetry"
)

const (
	framerInitial = 512      // an idle connection keeps little memory
	framerBurst   = 16 << 10 // a busy connection's reads: a burst of answers at once (lending framers)
	framerBatch   = 64 << 10 // a larger buffer is given back once its line has gone
	// A line that outgrows framerLong gets framerLarge at once instead of
	// doubling its way there, which would leave a trail of buffers behind
	// (for a 16 MiB line, 15 MiB more), the largest two alive together
	// while one is copied into the other. Fresh memory costs only the
	// pages written, and a buffer much larger than its line is not handed
	// over with it (see route).
	framerLong  = 1 << 20
	framerLarge = 16 << 20
)

// Framer splits a byte stream into lines ended by "\n" or "\r\n". The
// limit Max is on a line's content, without its ending, so a line of max
// bytes is kept whichever ending it has. It never holds more than one
// line and its ending: the rest of a longer line is discarded as it
// arrives, and the next line is read normally.
type Framer struct {
	r   io.Reader
	Max int // the largest line content kept, in bytes

	buf        []byte // data is buf[start:end]
	start, end int
	scanned    int  // buf[start:scanned] holds no newline
	discarding bool // inside an overlong line
	seenCR     bool // the bytes discarded last ended with '\r'

	overlong func(seen int) // called once per discarded line, with its content's length
	// Stop, when set, is what Next returns as soon as a line passes Max,
	// instead of discarding the rest of it: the SSE reader fails its
	// request at once rather than read a huge line to its end.
	Stop error
	seen int // bytes of the overlong line so far

	// raw, when set (lend), is r's descriptor: with nothing pending, fill
	// waits on it holding no buffer (see fillLent). bytes counts what is
	// read through it (Config.Metrics); nil: not counted.
	raw     syscall.RawConn
	bytes   *telemetry.Conn
	attempt func(uintptr) bool // f.attemptRead, bound once so that it does not allocate
	readN   int                // what attemptRead read
	readErr error              // and read(2)'s error
	// full: the last read filled all the room it was given, so more is
	// likely waiting; a lending framer then reads into a burst buffer
	// (framerBurst), one read for what took 32 of the initial size.
	full bool
	// bursting counts down the reads a lending framer still makes into a
	// burst buffer after the last one that brought more than the initial
	// buffer holds (burstReads): answers come in bursts of every size on
	// a busy connection, and falling back to the small buffer after one
	// small read would cost two reads for the next large burst.
	bursting uint8
}

// idleBufs holds the framers' initial buffers while they wait with
// nothing pending (fillLent): a connection keeps no read buffer while it
// is idle, and the busy ones share a few. A bounded free list, not a
// sync.Pool: a GC empties a pool (and the race detector drops a quarter
// of what is put in one), and every buffer made again is an allocation on
// the request path. burstBufs does the same for the burst buffers of
// busy connections.
var (
	idleBufs  = make(chan *[framerInitial]byte, maxIdleBufs)
	burstBufs = make(chan *[framerBurst]byte, maxBurstBufs)
)

// maxIdleBufs (32 KiB) and maxBurstBufs (128 KiB) bound the free lists:
// a buffer given back past them is dropped. A burst buffer holds the
// answers to 64 requests in flight (about 200 bytes each), so a busy
// connection takes them in one read.
const (
	maxIdleBufs  = 64
	maxBurstBufs = 8
)

// takeBuf is a buffer from the free lists (a burst buffer when burst),
// or a new one when the list is empty.
func takeBuf(burst bool) []byte {
	if burst {
		select {
		case b := <-burstBufs:
			return b[:]
		default:
			return new([framerBurst]byte)[:]
		}
	}
	select {
	case b := <-idleBufs:
		return b[:]
	default:
		return new([framerInitial]byte)[:]
	}
}

// giveBuf gives a buffer of framerInitial or framerBurst bytes back to
// its free list.
func giveBuf(b []byte) {
	if len(b) == framerBurst {
		select {
		case burstBufs <- (*[framerBurst]byte)(b):
		default:
		}
		return
	}
	select {
	case idleBufs <- (*[framerInitial]byte)(b):
	default:
	}
}

// New reads lines of r, each of at most max bytes of content; overlong
// is called once for each longer line, which is discarded.
func New(r io.Reader, max int, overlong func(int)) *Framer {
	return &Framer{r: r, Max: max, overlong: overlong}
}

// Lend makes fill wait on raw, r's descriptor, while nothing is pending,
// holding no buffer meanwhile (the initial one goes back to idleBufs); m,
// when not nil, counts the bytes read that way. Only for a descriptor
// that is non-blocking (a pipe from os.Pipe) or whose reads are r's own.
func (f *Framer) Lend(raw syscall.RawConn, m *telemetry.Conn) {
	if CanLend {
		f.raw, f.bytes = raw, m
		f.attempt = f.attemptRead
	}
}

// Next returns the next complete line without its ending ("\n" or
// "\r\n"). The slice is valid until the following call.
func (f *Framer) Next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(f.buf[f.scanned:f.end], '\n'); i >= 0 {
			nl := f.scanned + i
			line := f.buf[f.start:nl]
			f.start, f.scanned = nl+1, nl+1
			cr := len(line) > 0 && line[len(line)-1] == '\r'
			if cr {
				line = line[:len(line)-1]
			}
			if f.discarding {
				f.discarding = false
				n := f.seen + len(line)
				if len(line) == 0 && !cr && f.seenCR {
					n-- // the '\r' of "\r\n" was discarded with the line
				}
				f.overlong(n)
				continue
			}
			if len(line) > f.Max {
				if f.Stop != nil {
					return nil, f.Stop
				}
				f.overlong(len(line))
				continue
			}
			return line, nil
		}
		f.scanned = f.end
		// Pending bytes with no newline yet: a line of more than max
		// bytes, unless the last is the '\r' of a "\r\n" still to come.
		if pending := f.end - f.start; f.discarding || pending > f.Max+1 || pending == f.Max+1 && f.buf[f.end-1] != '\r' {
			if f.Stop != nil {
				return nil, f.Stop
			}
			if !f.discarding {
				f.discarding, f.seen = true, 0
			}
			if pending > 0 {
				f.seen += pending
				f.seenCR = f.buf[f.end-1] == '\r'
			}
			f.start, f.end, f.scanned = 0, 0, 0
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
}

// Detach gives up the buffer behind the line next returned last: the line
// then belongs to the caller, who keeps it without copying (large answers),
// and the framer carries on in a fresh buffer with the bytes still pending.
func (f *Framer) Detach() {
	pending := f.buf[f.start:f.end]
	size := framerInitial
	for size < len(pending) {
		size *= 2
	}
	fresh := make([]byte, size)
	copy(fresh, pending)
	f.buf = fresh
	f.scanned -= f.start
	f.end -= f.start
	f.start = 0
}

// fill reads more input, first making room: it moves pending bytes to the
// front, grows the buffer up to what one line may need, and gives memory
// back after a large line has gone.
func (f *Framer) fill() error {
	pending := f.end - f.start
	if pending == 0 && len(f.buf) > framerBatch {
		f.buf = nil // and a lending framer waits holding none
	}
	if pending == 0 && f.raw != nil && !f.discarding && (f.buf == nil || f.lent()) {
		return f.fillLent()
	}
	if f.full && f.raw != nil && len(f.buf) == framerInitial && f.bursts() {
		// A line's start is pending and reads fill the buffer: go on in a
		// burst buffer.
		b := takeBuf(true)
		f.end = copy(b, f.buf[f.start:f.end])
		f.scanned -= f.start
		f.start = 0
		giveBuf(f.buf)
		f.buf = b
	}
	if f.buf == nil {
		f.buf = make([]byte, framerInitial)
		f.start, f.end, f.scanned = 0, 0, 0
	}
	if f.start > 0 && (f.end == len(f.buf) || pending == 0) {
		copy(f.buf, f.buf[f.start:f.end])
		f.scanned -= f.start
		f.end -= f.start
		f.start = 0
	}
	if f.end == len(f.buf) {
		size := 2 * len(f.buf)
		if len(f.buf) >= framerLong && len(f.buf) < framerLarge {
			size = framerLarge
		}
		if limit := f.Max + 2; size > limit && !f.discarding { // a line, "\r\n"
			size = max(limit, len(f.buf)+1)
		}
		if f.discarding {
			size = len(f.buf) // the buffer is empty while discarding
		}
		grown := make([]byte, size)
		copy(grown, f.buf[:f.end])
		f.buf = grown
	}
	n, err := f.r.Read(f.buf[f.end:])
	f.full = n == len(f.buf)-f.end
	f.end += n
	if f.bytes != nil {
		f.bytes.Read(n) // lent: r is the descriptor's file, not counting
	}
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// fillLent reads with nothing pending: when the pipe is empty the
// initial buffer goes back to idleBufs, and attemptRead takes one again
// only for a read that finds bytes, so the wait holds none. A line is
// valid only until the following next, so no line refers to the buffer
// given back.
func (f *Framer) fillLent() error {
	f.start, f.end, f.scanned = 0, 0, 0
	if burst := f.burst(); f.buf != nil && burst != (len(f.buf) == framerBurst) {
		giveBuf(f.buf) // the other size, for this read
		f.buf = nil
	}
	f.readN, f.readErr = 0, nil
	if err := f.raw.Read(f.attempt); err != nil {
		// Closed while waiting (the reader's read end closed), or before
		// any attempt (a deadline passed): hold no buffer either way.
		if f.buf != nil {
			giveBuf(f.buf)
			f.buf = nil
		}
		return err
	}
	if n := f.readN; n > 0 {
		f.end = n
		if f.bytes != nil {
			f.bytes.Read(n)
		}
		return nil
	}
	if f.readErr != nil {
		return f.readErr
	}
	return io.EOF // read(2) found the pipe's end
}

// attemptRead is one read(2) on the descriptor, into a buffer taken from
// idleBufs. It gives the buffer back and reports false (wait for input)
// when there is nothing to read.
func (f *Framer) attemptRead(fd uintptr) bool {
	if f.buf == nil {
		f.buf = takeBuf(f.burst())
	}
	for {
		n, err := rawRead(fd, f.buf)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			giveBuf(f.buf)
			f.buf = nil
			return false
		}
		f.readN, f.readErr = max(n, 0), err
		f.full = n == len(f.buf)
		switch {
		case n > framerInitial || f.full:
			f.bursting = burstReads
		case f.bursting > 0:
			f.bursting--
		}
		return true
	}
}

// burstReads is how many reads a lending framer goes on making into a
// burst buffer after one that needed it.
const burstReads = 16

// burst reports whether a lending framer's next read goes into a burst
// buffer.
func (f *Framer) burst() bool { return (f.full || f.bursting > 0) && f.bursts() }

// lent reports whether the buffer is one of the free lists' sizes (a
// lending framer gives it back while it waits).
func (f *Framer) lent() bool {
	return len(f.buf) == framerInitial || len(f.buf) == framerBurst && f.bursts()
}

// bursts reports whether this framer reads into burst buffers when reads
// fill its initial one: not when its line limit is well below one, so
// that it never holds much more than a line.
func (f *Framer) bursts() bool { return f.Max+2 >= framerBurst }
