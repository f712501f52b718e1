package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
)

// Forward is the floor of any Streamable HTTP front for a stdio server:
// net/http's server and one pipe each way to a child process, and nothing
// else. Each POSTed request is written to the child's stdin as it came and
// answered with the next line of its stdout (one exchange at a time, under
// a lock: it serves one client at one call in flight, as the gateway
// measurement calls); a notification is written and answered 202. It
// checks nothing, keeps no session, decodes nothing, and relays no server
// request or notification: what a gateway does beyond it is what it costs
// beyond the floor.
type Forward struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	mu  sync.Mutex
}

// StartForward starts argv as the child.
func StartForward(argv []string) (*Forward, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	in, out, err := startPiped(cmd)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	return &Forward{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}, nil
}

// ServeHTTP forwards one POSTed message.
func (f *Forward) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	body = append(bytes.TrimSpace(body), '\n')
	request := bytes.Contains(body, []byte(`"id"`)) && bytes.Contains(body, []byte(`"method"`))
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.in.Write(body); err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	if !request {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	line, err := f.out.ReadBytes('\n')
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(line)
}

// Close ends the child: its stdin closed, then waited for.
func (f *Forward) Close() error {
	_ = f.in.Close()
	return f.cmd.Wait()
}
