//go:build !unix

package engine

import "errors"

// directWrites: off where a pipe write may block (Windows pipes are not
// non-blocking): every line goes through the writer goroutine, so a
// caller still never waits on the pipe.
const directWrites = false

// rawWrite is never called where directWrites is false.
func rawWrite(uintptr, []byte) (int, error) {
	return 0, errors.New("snodo: no direct pipe writes on this system")
}
