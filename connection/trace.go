package connection

import "strconv"

// Direction tells which way a line travelled between the client and the
// server: Sent (to the server's stdin) or Received (from its stdout).
type Direction int

// The directions a snodo.WithWireTrace hook is called with. The zero Direction
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
