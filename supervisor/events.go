package supervisor

import (
	"fmt"
	"time"
)

// EventKind says what happened to a supervised connection.
type EventKind int

// The events a supervisor reports, in the order they can happen.
const (
	// Connected: a server is up and answering (the first, or after a
	// restart: then Restarts > 0 and Downtime is set).
	Connected EventKind = iota + 1
	// Exited: the server went away unexpectedly (Err says how) or a
	// restart attempt failed; a restart follows after Delay unless the
	// intensity limit is passed.
	Exited
	// GaveUp: the intensity limit was passed; Err is the *GaveUpError and
	// the supervisor stops.
	GaveUp
	// Stopped: supervision ended (Err: ErrClosed, ErrOwnerExited, or the
	// *GaveUpError).
	Stopped
)

// String is "connected", "exited", "gave-up" or "stopped".
func (k EventKind) String() string {
	switch k {
	case Connected:
		return "connected"
	case Exited:
		return "exited"
	case GaveUp:
		return "gave-up"
	case Stopped:
		return "stopped"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event reports a change in a supervised connection. WithEventHandler
// and WithEventsTo receive them; the logger gets the same.
type Event struct {
	Kind      EventKind
	Name      string        // WithName, or the command
	Restarts  int           // restarts inside the intensity window so far
	Total     int           // restarts since Connect
	ServerPID int           // Connected: the new server's process id
	Delay     time.Duration // Exited: the back-off before the next attempt
	Downtime  time.Duration // Connected after a restart: since the exit
	Err       error         // Exited, GaveUp, Stopped: why
}

// IgnoreDeadLetterLogging keeps events sent to a stopped actor out of the
// dead-letter log.
func (*Event) IgnoreDeadLetterLogging() {}
