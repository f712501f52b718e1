//go:build !unix

package engine

import "syscall"

var forceSignals = []syscall.Signal{syscall.SIGKILL}
