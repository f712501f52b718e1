package testserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// proc is a running test server driven over raw JSON lines.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
	state  error
	notes  []msg // notifications skipped while waiting for responses
}

// msg is a decoded JSON-RPC message.
type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

const wait = 10 * time.Second

func start(t *testing.T, flags ...string) *proc {
	t.Helper()
	bin, args := testutil.Server(t, flags...)
	p := &proc{t: t, cmd: exec.Command(bin, args...), lines: make(chan []byte, 1024), done: make(chan struct{})}
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		r := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	})
	readers.Go(func() {
		b, _ := io.ReadAll(errPipe)
		p.mu.Lock()
		p.stderr.Write(b)
		p.mu.Unlock()
	})
	go func() {
		readers.Wait()
		p.state = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// request sends a request with a numeric id and params (any JSON value).
func (p *proc) request(id int, method string, params any) {
	p.t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(string(b))
}

// line returns the next raw stdout line.
func (p *proc) line() []byte {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("server closed stdout; stderr: %s", p.stderrText())
		}
		return l
	case <-time.After(wait):
		p.t.Fatal("timed out waiting for a line")
	}
	return nil
}

// next returns the next message.
func (p *proc) next() msg {
	p.t.Helper()
	l := p.line()
	var m msg
	if err := json.Unmarshal(l, &m); err != nil {
		p.t.Fatalf("bad line %q: %v", l, err)
	}
	return m
}

// response reads until the response with the numeric id, keeping
// notifications in p.notes; it fails on any other message.
func (p *proc) response(id int) msg {
	p.t.Helper()
	for {
		m := p.next()
		if m.Method != "" && m.ID == nil {
			p.notes = append(p.notes, m)
			continue
		}
		if string(m.ID) != jsonText(id) {
			p.t.Fatalf("got message %+v, want response %d", m, id)
		}
		return m
	}
}

// result reads the response to id, requires success and decodes it into v.
func (p *proc) result(id int, v any) {
	p.t.Helper()
	m := p.response(id)
	if m.Error != nil {
		p.t.Fatalf("response %d: error %d %s", id, m.Error.Code, m.Error.Message)
	}
	if err := json.Unmarshal(m.Result, v); err != nil {
		p.t.Fatalf("response %d: %v in %s", id, err, m.Result)
	}
}

// errorCode reads the response to id and returns its error code.
func (p *proc) errorCode(id int) int {
	p.t.Helper()
	m := p.response(id)
	if m.Error == nil {
		p.t.Fatalf("response %d: want error, got %s", id, m.Result)
	}
	return m.Error.Code
}

// exit closes stdin and returns the exit error once the process ends.
func (p *proc) exit() error {
	p.t.Helper()
	_ = p.in.Close()
	for range p.lines { // drain
	}
	select {
	case <-p.done:
	case <-time.After(wait):
		p.t.Fatal("server did not exit")
	}
	return p.state
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// modern returns params carrying the modern request _meta plus extra members.
func modern(extra map[string]any) map[string]any {
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}}
	for k, v := range extra {
		p[k] = v
	}
	return p
}
