package engine

import (
	"bytes"

	"github.com/snodo/snodo/connection"
)

// traceSent reports each line in b (one or more newline-terminated lines
// just built by an add function) to the trace hook, without its newline.
// The caller checks w.trace != nil and holds w.mu, so that sent lines are
// traced in the order they go on the wire.
func (w *writer) traceSent(b []byte) {
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		w.trace(connection.Sent, line)
		b = rest
	}
}
