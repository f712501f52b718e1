//go:build !unix

package connection

// lendingReads: the reader keeps its buffer while it waits (framer.lend
// does nothing).
const lendingReads = false

// rawRead is never called where lendingReads is false.
func rawRead(uintptr, []byte) (int, error) { panic("connection: rawRead without lendingReads") }
