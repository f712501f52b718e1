//go:build unix

package servers

import "syscall"

// openFlags make opening the file wait for nothing (O_NONBLOCK: a named
// pipe without a writer opens at once) and never make a terminal the
// process's controlling terminal (O_NOCTTY).
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
