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

// The NATS credential, key and certificate flags refuse what is not a
// small regular file, before the NATS client reads it whole: a named
// pipe with no writer blocked snodo for ever (SIGTERM did not end it),
// and /dev/zero was read until memory ran out.
func TestNATSFileFlagsRefuseWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "creds")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // should snodo block after all, a writer frees it
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
	})
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, path, want string }{
		{"nats-creds", fifo, "a named pipe (FIFO), not a regular file: give the path of the file itself"},
		{"nats-nkey", fifo, "a named pipe (FIFO), not a regular file"},
		{"nats-ca", fifo, "a named pipe (FIFO), not a regular file"},
		{"nats-ca", "/dev/zero", "a character device, not a regular file"},
		{"nats-nkey", dir, "a directory, not a regular file"},
		{"nats-creds", big, "1048577 bytes, more than 1048576"},
		{"nats-creds", filepath.Join(dir, "missing"), "no such file or directory"},
	} {
		t.Run(c.flag+" "+filepath.Base(c.path), func(t *testing.T) {
			r := snodo(t, "--"+c.flag, c.path, "--nats", "nats://127.0.0.1:1", "--server", "x", "tools").want(t, 2)
			if !strings.Contains(r.stderr, "--"+c.flag+" "+c.path+": "+c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, r.stderr)
			}
		})
	}
	// node reads them too.
	r := snodo(t, "node", "--config", "x.json", "--nats-nkey", fifo).want(t, 2)
	if !strings.Contains(r.stderr, "a named pipe (FIFO)") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
