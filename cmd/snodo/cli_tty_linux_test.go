//go:build linux

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/snodo/snodo/test/testutil"
)

// openPTY opens a pseudo-terminal and returns its master and its slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = master.Close() })
	// Through SyscallConn, not Fd: the master stays non-blocking, so
	// closing it ends a Read in progress.
	conn, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var unlock int32
	var n uint32
	var errno syscall.Errno
	err = conn.Control(func(fd uintptr) {
		if _, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno == 0 {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n)))
		}
	})
	if err != nil || errno != 0 {
		t.Fatalf("setting up the pseudo-terminal: %v %v", err, errno)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// On a terminal, snodo asks the user for each field of an elicitation
// form: a multi-select enum takes its values separated by commas and is
// sent as an array, an enum lists its choices with their titles, and an
// answer that does not fit the schema is asked again instead of failing
// the server's request.
func TestElicitationPromptOnATerminal(t *testing.T) {
	master, slave := openPTY(t)
	params := `{"method":"elicitation/create","params":{"mode":"form","message":"Pick","requestedSchema":{"type":"object",` +
		`"properties":{"colours":{"type":"array","items":{"anyOf":[{"const":"red","title":"Red"},{"const":"blue","title":"Blue"}]}},` +
		`"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}},"required":["colours","size"]}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, snodoBin, "--json", "request", "test/serverRequest", params, "--", testutil.ServerPath(t), "-era", "legacy")
	var stdout bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &stdout, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = slave.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	chunks := make(chan string, 64)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(chunks)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				select {
				case chunks <- string(buf[:n]):
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var screen strings.Builder
	// expect waits until the terminal shows want after what it showed
	// before, and answers with line.
	seen := 0
	expect := func(want, line string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !strings.Contains(screen.String()[seen:], want) {
			select {
			case c, ok := <-chunks:
				if !ok {
					t.Fatalf("the terminal closed before %q:\n%s", want, screen.String())
				}
				screen.WriteString(c)
			case <-deadline:
				t.Fatalf("the terminal never showed %q:\n%s", want, screen.String())
			}
		}
		seen = len(screen.String())
		if _, err := master.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	expect("colours (one or more of red (Red), blue (Blue), separated by commas): ", "red, blue")
	expect("size (one of s (Small), l (Large)): ", "Large")
	expect(`"Large" is not one of s, l; try again`, "l")

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("snodo: %v\n%s", err, screen.String())
		}
	case <-ctx.Done():
		t.Fatalf("snodo did not exit:\n%s", screen.String())
	}
	var out struct{ Responses []json.RawMessage }
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Responses) != 1 {
		t.Fatalf("stdout %q: %v", stdout.String(), err)
	}
	var resp struct {
		Result struct {
			Action  string
			Content map[string]any
		}
	}
	_ = json.Unmarshal(out.Responses[0], &resp)
	got, _ := json.Marshal(resp.Result.Content)
	if resp.Result.Action != "accept" || string(got) != `{"colours":["red","blue"],"size":"l"}` {
		t.Fatalf("the answer sent: %s", out.Responses[0])
	}
}
