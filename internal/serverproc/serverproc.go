// Package serverproc holds the rules about the server process that both the
// connection layer and the root package apply: which names an environment
// variable may have, and why a connection stopped (the sentinel errors the
// connection package exports, and one word for each, for metrics).
package serverproc

import (
	"errors"
	"fmt"
	"strings"

	snodoactor "github.com/snodo/snodo/actor"
)

// Why a connection stopped; the connection package exports these under
// the same names, with their documentation.
var (
	ErrClosed       = errors.New("connection closed by the client")
	ErrServerExited = errors.New("server exited")
	ErrStdinClosed  = errors.New("server closed its stdin")
	ErrStdoutClosed = errors.New("server closed its stdout")
	ErrNotReading   = errors.New("server is not reading its stdin")
	// The Streamable HTTP transport's own reasons.
	ErrSessionExpired    = errors.New("the server ended the HTTP session")
	ErrServerUnreachable = errors.New("the MCP endpoint cannot be reached")
	// The HTTP+SSE transport's own.
	ErrStreamEnded = errors.New("the server ended the SSE stream")
)

// ExitCause names why a connection stopped in one low-cardinality word,
// for metrics and logs: "closed", "server_exited", "stdin_closed",
// "stdout_closed", "not_reading", "session_expired", "stream_ended", "unreachable",
// "owner_exited", "panicked", or
// "stopped" (any other reason: Stop, Poison, or actor.Exit with a reason
// of the caller's).
func ExitCause(reason error) string {
	switch {
	case errors.Is(reason, ErrClosed):
		return "closed"
	case errors.Is(reason, ErrServerExited):
		return "server_exited"
	case errors.Is(reason, ErrStdinClosed):
		return "stdin_closed"
	case errors.Is(reason, ErrStdoutClosed):
		return "stdout_closed"
	case errors.Is(reason, ErrNotReading):
		return "not_reading"
	case errors.Is(reason, ErrSessionExpired):
		return "session_expired"
	case errors.Is(reason, ErrStreamEnded):
		return "stream_ended"
	case errors.Is(reason, ErrServerUnreachable):
		return "unreachable"
	case errors.Is(reason, snodoactor.ErrOwnerExited):
		return "owner_exited"
	case errors.Is(reason, snodoactor.ErrPanicked):
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
