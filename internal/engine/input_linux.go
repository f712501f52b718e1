package engine

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unreadInput returns how many bytes written to the server's stdin wait
// in the pipe unread (FIONREAD works on either end of a Linux pipe), or
// -1 when that cannot be told.
func unreadInput(f *os.File) int {
	raw, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	n := int32(-1)
	cerr := raw.Control(func(fd uintptr) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
			n = -1
		}
	})
	if cerr != nil {
		return -1
	}
	return int(n)
}

// noReaders reports whether nobody holds the read end of the pipe whose
// write end is f any more (poll reports POLLERR on the write end then):
// nothing written to it can be read from now on. False when that cannot
// be told.
func noReaders(f *os.File) bool {
	raw, err := f.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	cerr := raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 1 {
			gone = fds[0].Revents&unix.POLLERR != 0
		}
	})
	return cerr == nil && gone
}
