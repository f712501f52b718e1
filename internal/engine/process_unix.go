//go:build unix

package engine

import (
	"fmt"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the server in a process group of its own, so that
// a forced shutdown reaches the grandchildren of wrappers such as npx.
func setProcessGroup(cmd *exec.Cmd, own bool) {
	if own {
		cmd.SysProcAttr = ownGroup
	}
}

// ownGroup is every server's SysProcAttr: one value shared by all, never
// written (os/exec only reads it), so that a connection does not keep a
// copy of its own.
var ownGroup = &syscall.SysProcAttr{Setpgid: true}

// signalGroup signals the server's process group (or the process alone
// when it has none of its own).
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	pid := cmd.Process.Pid
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		_ = syscall.Kill(-pid, sig)
		return
	}
	_ = syscall.Kill(pid, sig)
}

func signalName(s syscall.Signal) string { return fmt.Sprintf("%d (%s)", int(s), s) }
