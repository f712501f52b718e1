package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// maxLogged bounds how much of one message --verbose copies to stderr.
const maxLogged = 2000

// runTee is the relay --verbose puts between snodo and the server
// (`snodo __tee -- SERVER_CMD [ARGS...]`): it passes stdin to the server
// and the server's stdout back unchanged, and copies each line to stderr,
// "→" for what snodo sends and "←" for what the server answers. It exits
// with the server's status once the server closed its stdout and exited.
func runTee(args []string) int {
	_, server, ok := cutDashDash(args)
	if !ok || len(server) == 0 {
		fmt.Fprintln(os.Stderr, "snodo: usage: snodo "+teeArg+" -- SERVER_CMD [ARGS...]")
		return exitUsage
	}
	cmd := exec.Command(server[0], server[1:]...)
	cmd.Stderr = os.Stderr
	toServer, err1 := cmd.StdinPipe()
	fromServer, err2 := cmd.StdoutPipe()
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(os.Stderr, "snodo: --verbose relay: %v\n", err)
		return exitFailure
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "snodo: cannot start the server: %v; check SERVER_CMD (after --) and --dir\n", err)
		return exitFailure
	}
	var logMu sync.Mutex
	go func() {
		relay(toServer, os.Stdin, "snodo → ", &logMu)
		_ = toServer.Close() // EOF for the server, as if snodo had closed it
	}()
	// Read the server's stdout to its end before Wait, which closes it:
	// otherwise its last lines could be lost.
	relay(os.Stdout, fromServer, "snodo ← ", &logMu)
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	return exitOK
}

// relay copies src to dst, logging each line to stderr after arrow (cut to
// maxLogged bytes). It returns at EOF or when a write fails.
func relay(dst io.Writer, src io.Reader, arrow string, logMu *sync.Mutex) {
	in := bufio.NewReaderSize(src, 64<<10)
	var logged []byte // the logged part of the current line
	for {
		chunk, err := in.ReadSlice('\n')
		if len(chunk) > 0 {
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
			if room := maxLogged - len(logged); room > 0 {
				logged = append(logged, chunk[:min(room, len(chunk))]...)
			}
			if chunk[len(chunk)-1] == '\n' {
				logMu.Lock()
				fmt.Fprintf(os.Stderr, "%s%s\n", arrow, trimNewline(logged))
				logMu.Unlock()
				logged = logged[:0]
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
