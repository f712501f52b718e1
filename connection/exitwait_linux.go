//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package connection

import (
	"os"
	"syscall"
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
	asked := false
	// The first call asks to wait for readability; the second comes once
	// the poller has seen it. A poller that cannot take the fd makes Read
	// fail, and a wake-up too early only means Wait blocks a little.
	_ = raw.Read(func(uintptr) bool {
		done := asked
		asked = true
		return done
	})
}
