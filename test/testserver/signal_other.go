//go:build !linux

package testserver

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// dieBySignal makes the process terminate by sig where the system has
// signals, or exit with 128+sig where it does not deliver them (Windows).
func dieBySignal(sig syscall.Signal) {
	signal.Reset(sig)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(sig)
	}
	time.Sleep(5 * time.Second)
	os.Exit(128 + int(sig))
}
