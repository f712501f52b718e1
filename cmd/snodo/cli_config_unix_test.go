//go:build unix

package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// --config refuses what is not a regular file, at once: a named pipe
// with no writer blocked snodo for ever (servers, --server and node
// alike), and /dev/zero was read up to the 1 MiB bound. The error names
// the path, says what it is and what to pass.
func TestConfigRefusesAFIFOAndADevice(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "mcp.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // should snodo block after all, a writer frees it
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
	})
	for _, c := range []struct {
		args []string
		what string
	}{
		{[]string{"--config", fifo, "servers"}, "a named pipe (FIFO)"},
		{[]string{"--config", fifo, "--server", "x", "info"}, "a named pipe (FIFO)"},
		{[]string{"node", "--config", fifo}, "a named pipe (FIFO)"},
		{[]string{"--config", "/dev/zero", "servers"}, "a character device"},
		{[]string{"--config", dir, "--server", "x", "tools"}, "a directory"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := snodo(t, c.args...).want(t, 1)
			path := c.args[slices.Index(c.args, "--config")+1]
			r.oneErrorLine(t, path+": "+c.what+", not a regular file", "give the path of the JSON file itself")
		})
	}
}
