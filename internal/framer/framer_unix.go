//go:build unix

package framer

import "syscall"

// CanLend reports whether Lend does anything here: the pipe from the
// server is non-blocking, so the reader can wait for input before it
// takes a buffer.
const CanLend = true

// rawRead is one read(2) on the pipe's descriptor.
func rawRead(fd uintptr, b []byte) (int, error) { return syscall.Read(int(fd), b) }
