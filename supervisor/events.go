package supervisor

import (
	"fmt"
	"time"

	"github.com/snodo/snodo"
)

// EventKind says what happened to a supervised connection.
type EventKind int

// The events a supervisor reports, in the order they can happen.
const (
	// ServerConnected: a server is up and answering (the first, or after a
	// restart: then Restarts > 0 and Downtime is set).
	ServerConnected EventKind = iota + 1
	// ServerExited: the server went away unexpectedly (Err says how) or a
	// restart attempt failed; a restart follows after Delay unless the
	// intensity limit is passed.
	ServerExited
	// GaveUp: the intensity limit was passed; Err is the *GaveUpError and
	// the supervisor stops.
	GaveUp
	// Stopped: supervision ended (Err: snodo.ErrClosed, snodo.ErrOwnerExited, or the
	// *GaveUpError).
	Stopped
)

// String is "connected", "exited", "gave-up" or "stopped".
func (k EventKind) String() string {
	switch k {
	case ServerConnected:
		return "connected"
	case ServerExited:
		return "exited"
	case GaveUp:
		return "gave-up"
	case Stopped:
		return "stopped"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// LifecycleEvent reports a change in a supervised connection. WithEventHandler
// and WithEventsTo receive them; the logger gets the same.
type LifecycleEvent struct {
	Kind         EventKind
	snodo.Origin               // the server (WithName, or the target's String) and the member: "name#N" in a pool
	Restarts     int           // restarts inside the intensity window so far
	Total        int           // restarts since Connect
	ServerPID    int           // ServerConnected: the new server's process id; ServerExited: the one that went away (0 for a failed start)
	Delay        time.Duration // ServerExited: the back-off before the next attempt
	Downtime     time.Duration // ServerConnected after a restart: since the exit
	Err          error         // ServerExited, GaveUp, Stopped: why
}

// IgnoreDeadLetterLogging keeps events sent to a stopped actor out of the
// dead-letter log.
func (*LifecycleEvent) IgnoreDeadLetterLogging() {}
