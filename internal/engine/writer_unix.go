//go:build unix

package engine

import "syscall"

// directWrites: the pipe to the server is non-blocking, so a caller can
// make one write attempt itself without ever waiting on the pipe.
const directWrites = true

// rawWrite is one write(2) on the pipe's descriptor.
func rawWrite(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }
