package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo/bench/internal/wire"
	"github.com/snodo/snodo/bench/server"
)

func init() { register("minimal", connectMinimal) }

// minimal is the ceiling: the least a correct multiplexing client does,
// as a hand-tuned client does it:
//
//   - one writer goroutine that takes request lines from a queue (4096
//     lines; a full queue makes senders wait) and flushes only when the
//     queue is empty (after one yield), so that calls in flight together
//     leave in one write;
//   - one reader goroutine that finds each line's top-level members
//     without decoding or checking them (package wire);
//   - a mutex-protected map of id to reply channel (pooled);
//   - params encoded in advance: a raw request's params, with the era's
//     _meta spliced in once and kept for the next request with the same
//     bytes;
//
// with the same job as the others: the era's handshake, _meta on every
// modern request, decoding the tool result, answering elicitations and
// completing input_required rounds.
type minimal struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	meta    string // modern era: `"_meta":{…}`, ""  in the legacy era
	onEvent func()
	acked   chan struct{}

	w      *bufio.Writer // the writer goroutine's
	queue  chan *[]byte  // lines for the writer, at most minimalQueue
	closed chan struct{} // closed by Close: the writer stops

	mu      sync.Mutex // guards waiting
	waiting map[int64]chan reply
	nextID  atomic.Int64
	done    chan struct{}
	wrote   chan struct{} // closed when the writer has stopped
	werr    atomic.Pointer[error]

	spliced atomic.Pointer[splicedParams] // the last raw params, _meta spliced in
}

// minimalQueue bounds the lines waiting for the writer.
const minimalQueue = 4096

// splicedParams are raw params and the same with the era's _meta.
type splicedParams struct{ raw, params []byte }

// lines are the request lines' buffers, reused.
var lines = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// replyChans are the reply channels, reused (each gets one reply).
var replyChans = sync.Pool{New: func() any { return make(chan reply, 1) }}

type reply struct {
	result json.RawMessage
	err    json.RawMessage
}

type toolResult struct {
	ResultType string `json:"resultType"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError       bool                       `json:"isError"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

func connectMinimal(ctx context.Context, o Options) (Client, error) {
	if o.URL != "" {
		return connectMinimalHTTP(ctx, o)
	}
	cmd := exec.Command(o.Command, o.Args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &minimal{cmd: cmd, stdin: in, w: bufio.NewWriterSize(in, 64<<10), waiting: map[int64]chan reply{},
		done: make(chan struct{}), onEvent: o.OnEvent, acked: make(chan struct{}, 1),
		queue: make(chan *[]byte, minimalQueue), closed: make(chan struct{}), wrote: make(chan struct{})}
	go m.read(out)
	go m.writeLoop()
	fail := func(err error) (Client, error) { m.Close(); return nil, err }
	if o.Era == Modern {
		m.meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + ModernVersion +
			`","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		if _, err := m.request(ctx, "server/discover", "{"+m.meta+"}"); err != nil {
			return fail(err)
		}
		if o.OnEvent != nil {
			if err := m.listen(ctx); err != nil {
				return fail(err)
			}
		}
		return m, nil
	}
	if _, err := m.request(ctx, "initialize", `{"protocolVersion":"`+LegacyVersion+
		`","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1.0.0"}}`); err != nil {
		return fail(err)
	}
	if err := m.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"); err != nil {
		return fail(err)
	}
	return m, nil
}

func (m *minimal) read(out io.Reader) {
	defer close(m.done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), server.BigLineBytes+1)
	for sc.Scan() {
		msg := wire.Top(sc.Bytes())
		switch {
		case msg.Method == nil && msg.ID != nil:
			id, ok := wire.Int(msg.ID)
			if !ok {
				continue
			}
			m.mu.Lock()
			ch := m.waiting[id]
			delete(m.waiting, id)
			m.mu.Unlock()
			if ch != nil { // the scanner reuses its buffer: copy what is kept
				ch <- reply{bytes.Clone(msg.Result), bytes.Clone(msg.Error)}
			}
		case msg.ID != nil: // a server request: only elicitation is declared
			line := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"action":"decline"}}` + "\n"
			if string(msg.Method) != "elicitation/create" {
				line = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32601,"message":"method not found"}}` + "\n"
			}
			m.write(line) //nolint:errcheck
		case string(msg.Method) == "notifications/tools/list_changed":
			if m.onEvent != nil {
				m.onEvent()
			}
		case string(msg.Method) == "notifications/subscriptions/acknowledged":
			m.acked <- struct{}{}
		}
	}
	m.mu.Lock()
	for id, ch := range m.waiting {
		ch <- reply{err: json.RawMessage(`{"code":-32000,"message":"connection closed"}`)}
		delete(m.waiting, id)
	}
	m.waiting = nil
	m.mu.Unlock()
}

// writeLoop writes the queued lines, flushing whenever the queue is
// empty (after yielding once, so that callers woken together by their
// replies send together), until Close.
func (m *minimal) writeLoop() {
	defer close(m.wrote)
	for {
		select {
		case b := <-m.queue:
			_, err := m.w.Write(*b)
			*b = (*b)[:0]
			lines.Put(b)
			if err == nil && len(m.queue) == 0 {
				// Empty: let the callers that are about to send do so
				// first, once, then flush what came.
				runtime.Gosched()
				if len(m.queue) == 0 {
					err = m.w.Flush()
				}
			}
			if err != nil {
				m.werr.CompareAndSwap(nil, &err)
				return
			}
		case <-m.closed:
			return
		}
	}
}

// enqueue hands a line to the writer.
func (m *minimal) enqueue(b *[]byte) error {
	if e := m.werr.Load(); e != nil {
		return *e
	}
	select {
	case m.queue <- b:
		return nil
	case <-m.wrote:
		return errors.New("connection closed")
	}
}

func (m *minimal) write(line string) error {
	b := lines.Get().(*[]byte)
	*b = append(*b, line...)
	return m.enqueue(b)
}

// Request sends method with params (a JSON object), the era's _meta
// spliced in once per params, and returns the raw result.
func (m *minimal) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if m.meta == "" || len(params) < 2 || params[len(params)-1] != '}' {
		return m.send(ctx, method, params)
	}
	sp := m.spliced.Load()
	if sp == nil || !bytes.Equal(sp.raw, params) {
		p := append(append(bytes.Clone(params[:len(params)-1]), ","+m.meta...), '}')
		if len(params) == 2 { // {}
			p = []byte("{" + m.meta + "}")
		}
		sp = &splicedParams{raw: bytes.Clone(params), params: p}
		m.spliced.Store(sp)
	}
	return m.send(ctx, method, sp.params)
}

// request sends method with params (a JSON object, already carrying _meta
// when the era needs it) and waits for the answer.
func (m *minimal) request(ctx context.Context, method, params string) (json.RawMessage, error) {
	return m.send(ctx, method, []byte(params))
}

// send queues the request line with params and waits for the answer.
func (m *minimal) send(ctx context.Context, method string, params []byte) (json.RawMessage, error) {
	id := m.nextID.Add(1)
	ch := replyChans.Get().(chan reply)
	m.mu.Lock()
	if m.waiting == nil {
		m.mu.Unlock()
		return nil, errors.New("connection closed")
	}
	m.waiting[id] = ch
	m.mu.Unlock()
	b := lines.Get().(*[]byte)
	line := append(*b, `{"jsonrpc":"2.0","id":`...)
	line = strconv.AppendInt(line, id, 10)
	line = append(line, `,"method":"`...)
	line = append(line, method...)
	line = append(line, `","params":`...)
	line = append(line, params...)
	*b = append(line, "}\n"...)
	if err := m.enqueue(b); err != nil {
		m.forget(id)
		return nil, err
	}
	select {
	case r := <-ch:
		replyChans.Put(ch)
		if r.err != nil {
			return nil, fmt.Errorf("%s: server error %s", method, r.err)
		}
		return r.result, nil
	case <-ctx.Done():
		m.forget(id) // ch may still get its reply: not reused
		return nil, ctx.Err()
	}
}

// forget stops waiting for id.
func (m *minimal) forget(id int64) {
	m.mu.Lock()
	delete(m.waiting, id)
	m.mu.Unlock()
}

func (m *minimal) listen(ctx context.Context) error {
	id := m.nextID.Add(1)
	m.mu.Lock()
	m.waiting[id] = make(chan reply, 1) // answered only when the stream ends
	m.mu.Unlock()
	if err := m.write(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) +
		`,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + m.meta + "}}\n"); err != nil {
		return err
	}
	select {
	case <-m.acked:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *minimal) Call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	head := `{"name":` + strconv.Quote(tool)
	if args != nil {
		head += `,"arguments":` + string(args)
	}
	if m.meta != "" {
		head += "," + m.meta
	}
	extra := ""
	for range 10 {
		raw, err := m.request(ctx, "tools/call", head+extra+"}")
		if err != nil {
			return "", err
		}
		var res toolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return "", err
		}
		if res.ResultType == "input_required" {
			extra = `,"inputResponses":{`
			first := true
			for k := range res.InputRequests {
				if !first {
					extra += ","
				}
				first = false
				extra += strconv.Quote(k) + `:{"action":"decline"}`
			}
			extra += `},"requestState":` + strconv.Quote(res.RequestState)
			continue
		}
		if res.IsError {
			return "", fmt.Errorf("tool %s failed", tool)
		}
		if len(res.Content) == 0 {
			return "", errors.New("result has no content")
		}
		return res.Content[0].Text, nil
	}
	return "", errors.New("too many input rounds")
}

func (m *minimal) Close() error {
	close(m.closed)
	<-m.wrote
	m.stdin.Close()
	<-m.done
	return m.cmd.Wait()
}
