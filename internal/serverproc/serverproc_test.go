package serverproc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/snodo/snodo/internal/sentinel"
)

func TestExitCause(t *testing.T) {
	for reason, want := range map[error]string{
		sentinel.ErrClosed: "closed", sentinel.ErrServerExited: "server_exited", sentinel.ErrStdinClosed: "stdin_closed",
		sentinel.ErrStdoutClosed: "stdout_closed", sentinel.ErrNotReading: "not_reading",
		sentinel.ErrOwnerExited: "owner_exited", sentinel.ErrActorPanicked: "panicked",
		fmt.Errorf("wrapped: %w", sentinel.ErrServerExited): "server_exited", errors.New("mine"): "stopped", nil: "stopped",
	} {
		if got := ExitCause(reason); got != want {
			t.Errorf("ExitCause(%v) = %q, want %q", reason, got, want)
		}
	}
}

func TestCheckEnvName(t *testing.T) {
	if err := CheckEnvName("PATH"); err != nil {
		t.Errorf("PATH: %v", err)
	}
	for _, bad := range []string{"", "A=B", "A\x00"} {
		if CheckEnvName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
