package engine

import (
	"sync"
	"time"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/callerrun"
	"github.com/snodo/snodo/internal/telemetry"
)

// outbound is where the connection's lines go: the stdio writer (a
// child's stdin, batched, with tickets that say what the server never
// read) or channelOut (any other Transport's Channel, a message at a
// time). Lines are built with their newline; kind is lineCaller or
// lineOwn.
type outbound interface {
	// append builds a line with add and sends or queues it; its ticket
	// (0: none) can drop it while it waits.
	append(kind int, add func([]byte) []byte) (uint64, error)
	// appendBuilt is append for a line built already, in a buffer the
	// caller reuses once it returns.
	appendBuilt(kind int, line []byte) (uint64, error)
	// appendAndWait is append whose channel receives the outcome of the
	// send.
	appendAndWait(add func([]byte) []byte) (uint64, <-chan error, error)
	// drop removes the line with ticket t if it was not sent yet, and
	// reports whether it did.
	drop(t uint64) bool
	// close stops taking lines and ends the way to the server (closing
	// stdin, Channel.Close) without waiting; closed is closed once it
	// is done.
	close()
	closed() <-chan struct{}
}

func (w *writer) closed() <-chan struct{} { return w.closedCh }

// channelOut sends the connection's lines on a Transport's Channel. A
// line is built in a buffer of its own (pooled), handed to Send without
// its newline, and given back: Send copies what it keeps. The lines of
// all callers go out in the order they were appended (one lock), as the
// Channel requires; a Channel queues what cannot go at once, within its
// own bound, so appending never waits on the server. Lines have no
// tickets: once handed to Send a line is the transport's, and the
// request's notifications/cancelled follows it.
type channelOut struct {
	ch     connection.Channel
	trace  func(connection.Direction, []byte)
	bytes  *telemetry.Conn
	failed func(error) // called once, when Send fails
	// runs is ch when it can leave a request's exchange to the caller
	// (the Streamable HTTP transport); nil otherwise.
	runs callerrun.Sender

	mu       sync.Mutex
	buf      []byte // the line being built; only under mu
	err      error  // set once no more lines are taken
	doneCh   chan struct{}
	closeOne sync.Once
}

func newChannelOut(ch connection.Channel, failed func(error)) *channelOut {
	o := &channelOut{ch: ch, failed: failed, doneCh: make(chan struct{})}
	o.runs, _ = ch.(callerrun.Sender)
	return o
}

func (o *channelOut) append(_ int, add func([]byte) []byte) (uint64, error) {
	return 0, o.send(add, nil)
}

func (o *channelOut) appendBuilt(_ int, line []byte) (uint64, error) {
	return 0, o.send(nil, line)
}

func (o *channelOut) appendAndWait(add func([]byte) []byte) (uint64, <-chan error, error) {
	if err := o.send(add, nil); err != nil {
		return 0, nil, err
	}
	return 0, sentNow, nil
}

// sentNow is the outcome of appendAndWait: the line was handed over.
var sentNow = func() <-chan error {
	ch := make(chan error, 1)
	ch <- nil
	close(ch)
	return ch
}()

// appendRequest is appendBuilt for the line of request r. When the
// Channel can leave the request's exchange to its caller
// (callerrun.Sender), it returns that exchange, for the caller to run
// once appendRequest has returned; else nil.
func (o *channelOut) appendRequest(line []byte, r *callerrun.Request) (callerrun.Runner, error) {
	if o.runs == nil {
		return nil, o.sendLine(nil, line)
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	// Made outside mu (line is the caller's own buffer): under it, the
	// exchange is only put in order (see callerrun.Sender).
	prep := o.runs.PrepareRequest(line, *r)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		prep.Discard()
		return nil, o.err
	}
	if o.trace != nil {
		o.trace(connection.Sent, line)
	}
	run, err := o.runs.SendRequest(prep)
	if err != nil {
		o.err = errWriterClosed
		go o.failed(err)
		return nil, errWriterClosed
	}
	o.bytes.Written(len(line) + 1)
	return run, nil
}

func (o *channelOut) send(add func([]byte) []byte, built []byte) error {
	return o.sendLine(add, built)
}

// sendLine sends the line add builds, or built.
func (o *channelOut) sendLine(add func([]byte) []byte, built []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	line := built
	if add != nil {
		o.buf = add(o.buf[:0])
		line = o.buf
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if o.trace != nil {
		o.trace(connection.Sent, line)
	}
	if err := o.ch.Send(line); err != nil {
		o.err = errWriterClosed
		go o.failed(err)
		return errWriterClosed
	}
	o.bytes.Written(len(line) + 1)
	if cap(o.buf) > keepBytes {
		o.buf = nil
	}
	return nil
}

func (o *channelOut) drop(uint64) bool { return false }

// close ends the channel (Close sends what it queued and tells the
// server) on a goroutine of its own, so that the connection actor, which
// calls it while it stops, never waits on the network.
func (o *channelOut) close() {
	o.closeOne.Do(func() {
		o.mu.Lock()
		if o.err == nil {
			o.err = errWriterClosed
		}
		o.mu.Unlock()
		go func() {
			defer close(o.doneCh)
			_ = o.ch.Close()
		}()
	})
}

func (o *channelOut) closed() <-chan struct{} { return o.doneCh }

// channelCloseWait bounds how long Conn.Close waits for a Channel's
// Close (an HTTP session's DELETE, say).
const channelCloseWait = 3 * time.Second
