package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/internal/sandbox"
)

// process is the server child: os/exec plus the parent's ends of its pipes.
// It knows nothing of JSON-RPC.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // parent's write end
	stdout *os.File // parent's read end
	stderr *stderrTap
	// box is the child's sandbox; nil: none (sandbox.go).
	box *sandbox.Handle
}

// startProcess starts the server. The child's pipe ends are closed in the
// parent right after Start, so EOF on stdout means every holder is gone.
func startProcess(cfg *Config) (*process, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("snodo: cannot start server %q: %w (check the command name and PATH)", cfg.Command, cmd.Err)
	}
	cmd.Dir = cfg.Dir
	cmd.Env = buildEnv(cfg)
	// Always a process group of its own: a server Connect gives up on,
	// and the helpers it started, can then be stopped together.
	setProcessGroup(cmd, true)

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("snodo: cannot create stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("snodo: cannot create stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	p := &process{cmd: cmd, stdin: inW, stdout: outR}
	childEnds := []*os.File{inR, outW}

	switch w := cfg.Stderr.(type) {
	case nil:
		cmd.Stderr = os.Stderr
	case *os.File:
		cmd.Stderr = w
	default:
		errR, errW, err := os.Pipe()
		if err != nil {
			closeAll(inR, inW, outR, outW)
			return nil, fmt.Errorf("snodo: cannot create stderr pipe: %w", err)
		}
		cmd.Stderr = errW
		childEnds = append(childEnds, errW)
		p.stderr = newStderrTap(errR, w)
	}

	p.box, err = startChild(cmd, cfg) // sandbox.go
	closeAll(childEnds...)
	if err != nil {
		closeAll(inW, outR)
		if p.stderr != nil {
			p.stderr.r.Close()
		}
		return nil, startError(cfg.Command, err) // sandbox.go
	}
	// The child has its copy of the environment and its pipe ends (closed
	// here); the connection keeps the process for as long as it lives and
	// needs none of them.
	cmd.Env, cmd.Stdin, cmd.Stdout = nil, nil, nil
	if p.stderr != nil {
		go p.stderr.run()
	}
	return p, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// buildEnv applies cfg.Env to the inherited (or allow-listed) environment.
func buildEnv(cfg *Config) []string {
	var base []string
	if cfg.CleanEnv {
		for _, name := range cfg.AllowEnv {
			if v, ok := os.LookupEnv(name); ok {
				base = append(base, name+"="+v)
			}
		}
	} else {
		base = os.Environ()
	}
	for _, e := range cfg.Env {
		kept := base[:0]
		for _, kv := range base {
			if !strings.HasPrefix(kv, e.Name+"=") {
				kept = append(kept, kv)
			}
		}
		base = kept
		if !e.Unset {
			base = append(base, e.Name+"="+e.Value)
		}
	}
	if base == nil {
		base = []string{} // nil would mean "inherit everything" to os/exec
	}
	return base
}

// describeExit turns Wait's result into words a user can act on.
func describeExit(err error) string {
	if limit, wait, ok := sandbox.Split(err); ok { // the sandbox stopped it
		return limit.Error() + "; " + describeExit(wait)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("server was killed by signal %s", signalName(ws.Signal()))
		}
		return fmt.Sprintf("server exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return fmt.Sprintf("server wait failed: %v", err)
	}
	return "server exited with status 0"
}

// stderrTap reads the server's stderr when the caller gave a writer that
// is not a file: it keeps the last lines for error messages and forwards
// the bytes to the writer through a bounded queue, so a writer that blocks
// never stalls the server or the connection (excess output is dropped).
type stderrTap struct {
	r   *os.File
	out io.Writer

	mu   sync.Mutex
	tail []byte // the last tailBytes bytes

	forward chan []byte
	done    chan struct{} // closed when reading has ended
}

const (
	tailBytes      = 2 << 10
	forwardChunks  = 64
	stderrTailLine = 3
)

func newStderrTap(r *os.File, out io.Writer) *stderrTap {
	return &stderrTap{r: r, out: out, forward: make(chan []byte, forwardChunks), done: make(chan struct{})}
}

func (t *stderrTap) run() {
	defer close(t.done)
	go t.pump()
	defer close(t.forward)
	defer t.r.Close()
	buf := make([]byte, 4096)
	for {
		n, err := t.r.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			t.mu.Lock()
			t.tail = append(t.tail, chunk...)
			if len(t.tail) > tailBytes {
				t.tail = append(t.tail[:0], t.tail[len(t.tail)-tailBytes:]...)
			}
			t.mu.Unlock()
			select {
			case t.forward <- chunk:
			default: // the writer is not keeping up: drop rather than stall
			}
		}
		if err != nil {
			return
		}
	}
}

func (t *stderrTap) pump() {
	for chunk := range t.forward {
		_, _ = t.out.Write(chunk)
	}
}

// lastLines returns up to n last non-empty lines of stderr, joined by
// " | ", each made safe to print (safetext.Visible): the server chose
// these bytes, and they go into errors that callers log and print, so
// an escape sequence is shown as text (\x1b…) and invalid UTF-8 as
// U+FFFD rather than passed on raw.
func (t *stderrTap) lastLines(n int) string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	text := string(t.tail)
	t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, safetext.Visible(l))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
