//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package engine

import (
	"os"
	"syscall"
	"unsafe"
)

// sysPidfdOpen is pidfd_open(2)'s number on every Linux architecture but
// MIPS (which uses the fallback).
const sysPidfdOpen = 434

// awaitExit returns once the process pid has exited (it is left for Wait
// to reap), without holding an OS thread while it waits: a pidfd becomes
// readable when its process exits, and the runtime's poller waits for
// that as it waits for a socket. It returns at once when the system
// cannot tell (Linux before 5.3): Wait then blocks in its system call, as
// it does elsewhere. Either way Wait, called next, sees the exit as it
// happens.
func awaitExit(pid int) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return
	}
	f := os.NewFile(fd, "pidfd") // non-blocking: registered with the poller
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	// Read first resets the poller's readiness, so each call checks the
	// pidfd itself (ppoll, no wait): an exit that came before that reset
	// is not missed. Read waits for the next readiness between calls.
	_ = raw.Read(exited)
}

// exited reports whether the pidfd fd is readable (its process exited).
func exited(fd uintptr) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: 0x1} // POLLIN
	var ts syscall.Timespec // zero: do not wait
	n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return errno != 0 || n > 0 // an error: let Wait block instead
}
