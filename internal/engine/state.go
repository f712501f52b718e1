package engine

import "strconv"

// lifeState is where a connection is in its life. It only moves forward,
// though a state may be skipped.
type lifeState int32

// The states of a connection.
const (
	// stateRunning: requests are sent and answered.
	stateRunning lifeState = iota
	// stateStopping: a stop reason is recorded (Close, the owner, an exit
	// signal, the server going away); callers fail with -32000 and what
	// is queued for stdin is flushed, then stdin is closed.
	stateStopping
	// stateDraining: the actor has stopped and stdin is closed; the
	// server's output is read and discarded until it exits.
	stateDraining
	// stateReaped: the server has exited and been reaped and the actor
	// has stopped; Done is closed.
	stateReaped
)

// String is "running", "stopping", "draining" or "reaped".
func (s lifeState) String() string {
	switch s {
	case stateRunning:
		return "running"
	case stateStopping:
		return "stopping"
	case stateDraining:
		return "draining"
	case stateReaped:
		return "reaped"
	}
	return "lifeState(" + strconv.Itoa(int(s)) + ")"
}

// lifeState is where the connection is in its life now; Err says why it
// stopped once it is past stateRunning.
func (c *Conn) lifeState() lifeState {
	select {
	case <-c.done:
		return stateReaped
	default:
	}
	select {
	case <-c.stopped:
		return stateDraining
	default:
	}
	if c.life.Reason() != nil {
		return stateStopping
	}
	return stateRunning
}
