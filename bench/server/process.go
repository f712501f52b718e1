package server

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// HTTPProcess is a benchserver -http started by a benchmark: the fast
// Streamable HTTP server in a process of its own, so that the client's
// CPU time is the client's alone.
type HTTPProcess struct {
	// URL is the server's MCP endpoint.
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartHTTP starts bin (the benchserver binary) serving Streamable HTTP on
// a free loopback port, with more benchserver flags (-forward), and waits
// for its endpoint URL.
func StartHTTP(bin string, flags ...string) (*HTTPProcess, error) {
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0"}, flags...)...)
	in, out, err := startPiped(cmd)
	if err != nil {
		return nil, err
	}
	p := &HTTPProcess{cmd: cmd, stdin: in}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case p.URL = <-line:
	case <-time.After(30 * time.Second):
	}
	if !strings.HasPrefix(p.URL, "http://") {
		p.Close()
		return nil, fmt.Errorf("benchserver -http printed %q, not its URL", p.URL)
	}
	return p, nil
}

// CPU is the user plus system CPU time the server process has used
// (Linux: /proc; 0 elsewhere).
func (p *HTTPProcess) CPU() time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command name (in parentheses, which may hold spaces).
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// Close stops the server (its stdin ends) and waits for it.
func (p *HTTPProcess) Close() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		return <-done
	}
}

// startPiped starts cmd with pipes to its stdin and from its stdout, its
// stderr going to this process's.
func startPiped(cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, error) {
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return in, out, nil
}
