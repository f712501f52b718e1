package connection

import "strconv"

// State is where a connection is in its life. It only moves forward,
// though a state may be skipped.
type State int32

// The states of a connection.
const (
	// StateRunning: requests are sent and answered.
	StateRunning State = iota
	// StateStopping: a stop reason is recorded (Close, the owner, an exit
	// signal, the server going away); callers fail with -32000 and what
	// is queued for stdin is flushed, then stdin is closed.
	StateStopping
	// StateDraining: the actor has stopped and stdin is closed; the
	// server's output is read and discarded until it exits.
	StateDraining
	// StateReaped: the server has exited and been reaped and the actor
	// has stopped; Done is closed.
	StateReaped
)

// String is "running", "stopping", "draining" or "reaped".
func (s State) String() string {
	switch s {
	case StateRunning:
		return "running"
	case StateStopping:
		return "stopping"
	case StateDraining:
		return "draining"
	case StateReaped:
		return "reaped"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// State is where the connection is in its life now; Err says why it
// stopped once it is past StateRunning.
func (c *Conn) State() State {
	select {
	case <-c.done:
		return StateReaped
	default:
	}
	select {
	case <-c.stopped:
		return StateDraining
	default:
	}
	if c.life.Reason() != nil {
		return StateStopping
	}
	return StateRunning
}
