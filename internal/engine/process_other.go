//go:build !unix

package engine

import (
	"fmt"
	"os/exec"
	"syscall"
)

func setProcessGroup(*exec.Cmd, bool) {}

func signalGroup(cmd *exec.Cmd, _ syscall.Signal) { _ = cmd.Process.Kill() }

func signalName(s syscall.Signal) string { return fmt.Sprintf("%d (%s)", int(s), s) }
