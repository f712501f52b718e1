package connection

import (
	"bytes"
	"io"
)

const (
	framerInitial = 512      // an idle connection keeps little memory
	framerBatch   = 64 << 10 // grown to this when reads fill the buffer
	// A line that outgrows framerLong gets framerLarge at once instead of
	// doubling its way there, which would leave a trail of buffers behind
	// (for a 16 MiB line, 15 MiB more), the largest two alive together
	// while one is copied into the other. Fresh memory costs only the
	// pages written, and a buffer much larger than its line is not handed
	// over with it (see route).
	framerLong  = 1 << 20
	framerLarge = 16 << 20
)

// framer splits a byte stream into lines ended by "\n" or "\r\n". The
// limit max is on a line's content, without its ending, so a line of max
// bytes is kept whichever ending it has. It never holds more than one
// line and its ending: the rest of a longer line is discarded as it
// arrives, and the next line is read normally.
type framer struct {
	r   io.Reader
	max int

	buf        []byte // data is buf[start:end]
	start, end int
	scanned    int  // buf[start:scanned] holds no newline
	discarding bool // inside an overlong line

	overlong func(seen int) // called once per discarded line, with its content's length
	seen     int            // bytes of the overlong line so far
	seenCR   bool           // the bytes discarded last ended with '\r'
}

func newFramer(r io.Reader, max int, overlong func(int)) *framer {
	return &framer{r: r, max: max, overlong: overlong}
}

// next returns the next complete line without its ending ("\n" or
// "\r\n"). The slice is valid until the following call.
func (f *framer) next() ([]byte, error) {
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
			if len(line) > f.max {
				f.overlong(len(line))
				continue
			}
			return line, nil
		}
		f.scanned = f.end
		// Pending bytes with no newline yet: a line of more than max
		// bytes, unless the last is the '\r' of a "\r\n" still to come.
		if pending := f.end - f.start; f.discarding || pending > f.max+1 || pending == f.max+1 && f.buf[f.end-1] != '\r' {
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

// detach gives up the buffer behind the line next returned last: the line
// then belongs to the caller, who keeps it without copying (large answers),
// and the framer carries on in a fresh buffer with the bytes still pending.
func (f *framer) detach() {
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
func (f *framer) fill() error {
	pending := f.end - f.start
	if pending == 0 && len(f.buf) > framerBatch {
		f.buf = nil
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
		if limit := f.max + 2; size > limit && !f.discarding { // a line, "\r\n"
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
	f.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}
