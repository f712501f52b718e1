//go:build !unix

package connection

import "syscall"

var forceSignals = []syscall.Signal{syscall.SIGKILL}
