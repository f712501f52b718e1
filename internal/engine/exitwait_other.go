//go:build !linux || mips || mipsle || mips64 || mips64le

package engine

// awaitExit cannot wait without a thread on this system: Wait does.
func awaitExit(int) {}
