package testserver

import (
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"
)

// kernelSigaction mirrors the kernel's struct sigaction on linux/amd64 and
// linux/arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// dieBySignal makes the process terminate by sig. The Go runtime handles
// some signals itself (a SIGSEGV sent with kill is ignored by it), so the
// disposition is reset to SIG_DFL at the kernel level before raising it.
func dieBySignal(sig syscall.Signal) {
	signal.Reset(sig)
	if sig != syscall.SIGKILL {
		var sa kernelSigaction // zero handler is SIG_DFL
		_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
			uintptr(unsafe.Pointer(&sa)), 0, unsafe.Sizeof(sa.mask), 0, 0)
	}
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(5 * time.Second)
	os.Exit(128 + int(sig))
}
