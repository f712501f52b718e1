//go:build unix

package servers

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The open itself never blocks: a path that became a named pipe after
// Load's Stat (the race Stat alone leaves) opens at once, without a
// writer, and is refused by the mode of what was opened.
func TestOpenRegularNeverBlocksOnAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "mcp.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		fh, err := openRegular(fifo)
		if fh != nil {
			_ = fh.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegularFile) {
			t.Fatalf("openRegular(FIFO) = %v, want ErrNotRegularFile", err)
		}
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
		<-done
		t.Fatal("openRegular blocked on a FIFO with no writer")
	}
}
