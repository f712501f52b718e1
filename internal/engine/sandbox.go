package engine

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/snodo/snodo/internal/sandbox"
)

// startChild starts the server's process: inside its sandbox when the
// configuration has one (internal/sandbox), else as os/exec does.
func startChild(cmd *exec.Cmd, cfg *Config) (*sandbox.Handle, error) {
	if cfg.Sandbox == nil {
		return nil, cmd.Start()
	}
	h, err := sandbox.Start(cmd, cfg.Sandbox)
	if err == nil {
		cfg.Logger.Debug("snodo: server started in its sandbox", "server", filepath.Base(cfg.Command),
			"server_pid", cmd.Process.Pid, "sandbox", h.Mechanisms())
	}
	return h, err
}

// startError is the error of a server that could not be started. A
// sandbox that cannot be set up says so itself: the command is fine.
func startError(command string, err error) error {
	var se *sandbox.Error
	if errors.As(err, &se) {
		return fmt.Errorf("snodo: cannot start server %q in its sandbox: %w (a server is never started without the sandbox asked for)", command, err)
	}
	return fmt.Errorf("snodo: cannot start server %q: %w (check that the command exists and is executable)", command, err)
}
