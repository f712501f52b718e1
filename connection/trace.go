package connection

import (
	"bytes"
	"strconv"
)

// Direction tells which way a line travelled between the client and the
// server: Sent (to the server's stdin) or Received (from its stdout).
type Direction int

// The directions a Config.Trace hook is called with. The zero Direction
// is neither.
const (
	Sent     Direction = iota + 1 // client → server
	Received                      // server → client
)

// String returns "sent" or "received" (words rather than arrows, so that
// logs stay readable in any encoding); any other value prints as
// "Direction(N)".
func (d Direction) String() string {
	switch d {
	case Sent:
		return "sent"
	case Received:
		return "received"
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// traceSent reports each line in b (one or more newline-terminated lines
// just built by an add function) to the trace hook, without its newline.
// The caller checks w.trace != nil and holds w.mu, so that sent lines are
// traced in the order they go on the wire.
func (w *writer) traceSent(b []byte) {
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		w.trace(Sent, line)
		b = rest
	}
}
