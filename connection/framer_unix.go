//go:build unix

package connection

import "syscall"

// lendingReads: the pipe from the server is non-blocking, so the reader
// can wait for input before it takes a buffer (framer.lend).
const lendingReads = true

// rawRead is one read(2) on the pipe's descriptor.
func rawRead(fd uintptr, b []byte) (int, error) { return syscall.Read(int(fd), b) }
