package supervisor

import (
	"errors"
	"fmt"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Why a supervised call failed without reaching a server, or why
// supervision ended, for errors.Is.
var (
	// ErrRestarting: the server is being restarted. With FailFast, calls
	// made meanwhile fail at once with a -32000 *snodo.Error wrapping it;
	// otherwise a call that waited past its timeout gets a -32001 wrapping
	// it.
	ErrRestarting = errors.New("supervisor: the server is restarting")
	// ErrStarting: a pool started with StartPool has no member up yet.
	// With FailFast, calls made meanwhile fail at once with a -32000
	// *snodo.Error wrapping it; otherwise a call that waited past its
	// timeout gets a -32001 wrapping it.
	ErrStarting = errors.New("supervisor: the pool is starting")
	// ErrGaveUp: the restart intensity limit was passed and supervision
	// stopped. The error wrapping it says the limit and the last exit
	// ("supervisor: gave up after 3 restarts in 10s: server exited with
	// status 3 …"), and wraps that exit too: errors.Is holds on its causes
	// (snodo.ErrServerExited, say).
	ErrGaveUp = errors.New("supervisor: gave up restarting the server")
)

// gaveUpError is why supervision stopped when the server kept exiting:
// more than Restarts restarts within Window (the OTP intensity rule).
// Last is the last exit; errors.Is(err, ErrGaveUp) and errors.Is on
// Last's causes (snodo.ErrServerExited, say) both hold.
type gaveUpError struct {
	Restarts int           // the limit that was passed
	Window   time.Duration // the window it applies to
	Last     error         // the last exit or failed start
}

// Error reads "supervisor: gave up after 3 restarts in 10s: server exited
// with status 3 (…)".
// With a limit of 0 it reads "supervisor: gave up at the first exit
// (WithIntensity allows no restart): …", and with 1, "1 restart".
func (e *gaveUpError) Error() string {
	const hint = "(the server keeps failing: run the command by hand to see why, or raise WithIntensity)"
	switch e.Restarts {
	case 0:
		return fmt.Sprintf("supervisor: gave up at the first exit (WithIntensity allows no restart): %s (run the command by hand to see why, or raise WithIntensity)",
			exitWords(e.Last))
	case 1:
		return fmt.Sprintf("supervisor: gave up after 1 restart in %s: %s %s", e.Window, exitWords(e.Last), hint)
	}
	return fmt.Sprintf("supervisor: gave up after %d restarts in %s: %s %s", e.Restarts, e.Window, exitWords(e.Last), hint)
}

// Unwrap returns ErrGaveUp and the last exit.
func (e *gaveUpError) Unwrap() []error { return []error{ErrGaveUp, e.Last} }

// unexpected reports whether a connection that stopped for reason (its
// Err, or the -32000 its callers got) should be restarted: anything but
// Close and the owner's exit, like an OTP transient child.
func unexpected(reason error) bool {
	return reason != nil && !errors.Is(reason, snodo.ErrClosed) && !errors.Is(reason, snodo.ErrOwnerExited)
}

// lostConnection reports whether a call failed because its server went
// away unexpectedly under it (a local -32000 that was not Close or owner
// exit): the call may or may not have run on the server.
func lostConnection(err error) bool {
	return errors.Is(err, snodo.ErrConnectionClosed) && unexpected(err)
}

// crashed reports whether Connect failed because the server exited or
// closed a pipe during the handshake, as opposed to a command that cannot
// start, bad options, or a protocol mismatch: only crashes are retried at
// start.
func crashed(err error) bool {
	return errors.Is(err, snodo.ErrServerExited) || errors.Is(err, snodo.ErrStdinClosed) ||
		errors.Is(err, snodo.ErrStdoutClosed)
}

// exitWords is the shortest description of an exit: the error that says
// "server exited with status 3" rather than the layers wrapped around it.
func exitWords(err error) string {
	if err == nil {
		return "no reason"
	}
	if e := deepest(err); e != nil {
		return e.Error()
	}
	return err.Error()
}

var exitSentinels = []error{snodo.ErrServerExited, snodo.ErrStdinClosed, snodo.ErrStdoutClosed}

// deepest finds, in err's tree, the innermost error that is not itself an
// exit sentinel but wraps one.
func deepest(err error) error {
	if err == nil || isSentinel(err) {
		return nil
	}
	var kids []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		kids = []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		kids = u.Unwrap()
	}
	for _, k := range kids {
		if d := deepest(k); d != nil {
			return d
		}
	}
	for _, s := range exitSentinels {
		if errors.Is(err, s) {
			return err
		}
	}
	return nil
}

func isSentinel(err error) bool {
	for _, s := range exitSentinels {
		if err == s {
			return true
		}
	}
	return false
}

// restartingError is what a FailFast call gets during a restart.
func restartingError(last error, next time.Time) error {
	when := "now"
	if d := time.Until(next); d > 0 {
		when = "in " + d.Round(time.Millisecond).String()
	}
	return jsonrpc.NewLocalError(snodo.CodeConnectionClosed,
		fmt.Sprintf("connection closed: the server is restarting after %s (next attempt %s); retry later, or leave out FailFast to wait for it",
			exitWords(last), when),
		snodo.ErrConnectionClosed, ErrRestarting)
}

// startingError is what a FailFast call gets before a pool's first member
// is up.
func startingError() error {
	return jsonrpc.NewLocalError(snodo.CodeConnectionClosed,
		"connection closed: the pool is starting and no member is up yet; wait for its PoolReady, or leave out FailFast to wait for it",
		snodo.ErrConnectionClosed, ErrStarting)
}

// waitTimeoutError is what a waiting call gets when no server came back
// within its timeout.
func waitTimeoutError(method string, waited time.Duration) error {
	return jsonrpc.NewLocalError(snodo.CodeTimeout,
		fmt.Sprintf("%s: no server came back within %s while a restart was under way; raise the Timeout request option or WithMaxWait", method, waited.Round(time.Millisecond)),
		snodo.ErrTimeout, ErrRestarting)
}

// startWaitTimeoutError is what a call waiting for a starting pool gets
// when no member came up within its timeout.
func startWaitTimeoutError(method string, waited time.Duration) error {
	return jsonrpc.NewLocalError(snodo.CodeTimeout,
		fmt.Sprintf("%s: no pool member came up within %s while the pool was starting; raise the Timeout request option or WithMaxWait", method, waited.Round(time.Millisecond)),
		snodo.ErrTimeout, ErrStarting)
}

// sandboxAttr is the log attribute naming the sandbox limit the server
// broke ("sandbox_limit", "memory"), when err says one stopped it.
func sandboxAttr(err error) []any {
	var se *snodo.SandboxError
	if errors.As(err, &se) && se.Err == nil {
		return []any{"sandbox_limit", se.Limit}
	}
	return nil
}
