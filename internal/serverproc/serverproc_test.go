package serverproc

import (
	"errors"
	"fmt"
	"testing"

	snodoactor "github.com/snodo/snodo/actor"
)

func TestExitCause(t *testing.T) {
	for reason, want := range map[error]string{
		ErrClosed: "closed", ErrServerExited: "server_exited", ErrStdinClosed: "stdin_closed",
		ErrStdoutClosed: "stdout_closed", ErrNotReading: "not_reading",
		snodoactor.ErrOwnerExited: "owner_exited", snodoactor.ErrPanicked: "panicked",
		fmt.Errorf("wrapped: %w", ErrServerExited): "server_exited", errors.New("mine"): "stopped", nil: "stopped",
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
