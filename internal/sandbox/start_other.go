//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
	"runtime"
)

// Handle is one sandboxed server; on this system there never is one.
type Handle struct{}

// Start refuses every sandbox: the limits need Linux (cgroups, prlimit,
// Landlock, namespaces), and a server is never started without the
// limits asked for.
func Start(cmd *exec.Cmd, spec *Spec) (*Handle, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return nil, &Error{Limit: firstLimit(spec), Mechanism: "none on " + runtime.GOOS,
		Err: errors.New("sandboxing a server needs Linux; run it without WithSandbox, or on Linux")}
}

// Mechanisms is empty: there is no sandbox here.
func (h *Handle) Mechanisms() string { return "" }

// Exit returns waitErr.
func (h *Handle) Exit(waitErr error) error { return waitErr }

func firstLimit(s *Spec) string {
	switch {
	case s.MemoryBytes > 0:
		return LimitMemory
	case s.CPUTime > 0:
		return LimitCPU
	case s.MaxProcesses > 0:
		return LimitProcesses
	case s.MaxOpenFiles > 0:
		return LimitFiles
	case s.Filesystem():
		return LimitFilesystem
	}
	return LimitNetwork
}
