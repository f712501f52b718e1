package connection

import (
	"os"
	"syscall"
	"unsafe"
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
