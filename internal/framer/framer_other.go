//go:build !unix

package framer

// CanLend reports whether Lend does anything here: not on this
// platform, where the reader keeps its buffer while it waits.
const CanLend = false

// rawRead is never called where CanLend is false.
func rawRead(uintptr, []byte) (int, error) { panic("framer: rawRead without CanLend") }
