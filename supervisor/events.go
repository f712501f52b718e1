package supervisor

import (
	"time"

	"github.com/snodo/snodo"
)

// The kinds of LifecycleEvent, in the order they can happen.
const (
	kindConnected = "connected"
	kindExited    = "exited"
	kindGaveUp    = "gave-up"
	kindStopped   = "stopped"
)

// LifecycleEvent reports a change in a supervised connection. WithEventHandler
// and WithEventsTo receive them; the logger gets the same.
type LifecycleEvent struct {
	quiet
	// Kind says what happened, in the order it can happen:
	//   - "connected": a server is up and answering (the first, or after
	//     a restart: then Restarts > 0 and Downtime is set);
	//   - "exited": the server went away unexpectedly (Err says how) or a
	//     restart attempt failed; a restart follows after Delay unless the
	//     intensity limit is passed;
	//   - "gave-up": the intensity limit was passed; Err wraps ErrGaveUp
	//     and the supervisor stops;
	//   - "stopped": supervision ended (Err: snodo.ErrClosed,
	//     snodo.ErrOwnerExited, or the error wrapping ErrGaveUp).
	Kind         string
	snodo.Origin               // the server (snodo.WithOrigin's Server, or the target's String) and the member: "name#N" in a pool
	Restarts     int           // restarts inside the intensity window so far
	Total        int           // restarts since Connect
	ServerPID    int           // connected: the new server's process id; exited: the one that went away (0 for a failed start)
	Delay        time.Duration // exited: the back-off before the next attempt
	Downtime     time.Duration // connected after a restart: since the exit
	Err          error         // exited, gave-up, stopped: why
}

// Ended tells the owner actor of a pool or a supervised client
// (snodo.WithOwner in WithConnectOptions, StartPool's pid, WithParent) that it has stopped: Err is why, as its
// Err() (snodo.ErrClosed, snodo.ErrOwnerExited, an error wrapping
// ErrGaveUp…). One of
// Pool and Client is set. Its servers may still be exiting: a *Reaped
// follows once every one has been reaped (Done closed). A pool or client
// whose start failed sends neither: its PoolReady (or Connect) carried the
// error, as a failed snodo.ConnectTo sends no snodo.Closed. Nor does one
// started with WithParent that stops because its parent stops or
// restarts: the parent gets its *actor.Terminated, always, before its own
// Stopped (an Ended might come after that Terminated, or not at all).
type Ended struct {
	quiet
	Pool   *Pool
	Client *Client
	Err    error
	snodo.Origin
}

// Reaped follows Ended once every server of the pool or supervised client
// has exited and been reaped: nothing it started runs any more.
type Reaped struct {
	quiet
	Pool   *Pool
	Client *Client
	snodo.Origin
}

// quiet, embedded in a message type, keeps that message out of
// protoactor's dead-letter log when its receiver is gone: the methods
// protoactor looks for are plumbing, not part of the message's API.
type quiet struct{}

// IgnoreDeadLetterLogging marks the message for protoactor.
func (quiet) IgnoreDeadLetterLogging() {}
