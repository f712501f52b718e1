// Package serverproc holds the rules about the server process that both the
// connection layer and the root package apply: which names an environment
// variable may have, and one word, for metrics, for each reason a
// connection stops (internal/sentinel).
package serverproc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/snodo/snodo/internal/sentinel"
)

// ExitCause names why a connection stopped in one low-cardinality word,
// for metrics and logs: "closed", "server_exited", "stdin_closed",
// "stdout_closed", "not_reading", "session_expired", "stream_ended", "unreachable",
// "owner_exited", "panicked", or
// "stopped" (any other reason: Stop, Poison, or actor.Exit with a reason
// of the caller's).
func ExitCause(reason error) string {
	switch {
	case errors.Is(reason, sentinel.ErrClosed):
		return "closed"
	case errors.Is(reason, sentinel.ErrServerExited):
		return "server_exited"
	case errors.Is(reason, sentinel.ErrStdinClosed):
		return "stdin_closed"
	case errors.Is(reason, sentinel.ErrStdoutClosed):
		return "stdout_closed"
	case errors.Is(reason, sentinel.ErrNotReading):
		return "not_reading"
	case errors.Is(reason, sentinel.ErrSessionExpired):
		return "session_expired"
	case errors.Is(reason, sentinel.ErrStreamEnded):
		return "stream_ended"
	case errors.Is(reason, sentinel.ErrServerUnreachable):
		return "unreachable"
	case errors.Is(reason, sentinel.ErrOwnerExited):
		return "owner_exited"
	case errors.Is(reason, sentinel.ErrActorPanicked):
		return "panicked"
	}
	return "stopped"
}

// CheckEnvName reports whether name can name an environment variable:
// not empty, and without '=' or a NUL byte (the environment is a list of
// NAME=VALUE strings, so such a name would set a different variable, or
// none, without a word).
func CheckEnvName(name string) error {
	switch {
	case name == "":
		return errors.New("empty environment variable name")
	case strings.ContainsRune(name, '='):
		return fmt.Errorf("environment variable name %q contains '=': give the name alone (and the value apart)", name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("environment variable name %q contains a NUL byte", name)
	}
	return nil
}
