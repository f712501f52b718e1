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
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo/bench/internal/wire"
	"github.com/snodo/snodo/bench/server"
)

func init() { register("minimal", connectMinimal) }

// minimal is the ceiling: the least a correct multiplexing client does —
// one writer (a mutex and a buffered writer, flushed by each request),
// one reader that finds each line's top-level members without decoding
// or checking them (package wire), a map of channels — with the same job as the others: the era's handshake, _meta
// on every modern request, decoding the tool result, answering
// elicitations and completing input_required rounds.
type minimal struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	meta    string // modern era: `"_meta":{…}`, ""  in the legacy era
	onEvent func()
	acked   chan struct{}

	mu      sync.Mutex // guards w and waiting
	w       *bufio.Writer
	waiting map[int64]chan reply
	nextID  atomic.Int64
	done    chan struct{}
}

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
	m := &minimal{cmd: cmd, stdin: in, w: bufio.NewWriter(in), waiting: map[int64]chan reply{},
		done: make(chan struct{}), onEvent: o.OnEvent, acked: make(chan struct{}, 1)}
	go m.read(out)
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

func (m *minimal) write(line string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.w.WriteString(line)
	return m.w.Flush()
}

// Request sends method with params (a JSON object), the era's _meta
// spliced in as the line is written, and returns the raw result.
func (m *minimal) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return m.send(ctx, method, "", params)
}

// request sends method with params (a JSON object, already carrying _meta
// when the era needs it) and waits for the answer.
func (m *minimal) request(ctx context.Context, method, params string) (json.RawMessage, error) {
	return m.send(ctx, method, params, nil)
}

// send writes the request line with params, or with raw plus the era's
// _meta when params is empty, and waits for the answer.
func (m *minimal) send(ctx context.Context, method, params string, raw []byte) (json.RawMessage, error) {
	id := m.nextID.Add(1)
	ch := make(chan reply, 1)
	m.mu.Lock()
	if m.waiting == nil {
		m.mu.Unlock()
		return nil, errors.New("connection closed")
	}
	m.waiting[id] = ch
	m.w.WriteString(`{"jsonrpc":"2.0","id":`)
	m.w.WriteString(strconv.FormatInt(id, 10))
	m.w.WriteString(`,"method":"`)
	m.w.WriteString(method)
	m.w.WriteString(`","params":`)
	if raw != nil && m.meta != "" && len(raw) > 2 && raw[len(raw)-1] == '}' {
		m.w.Write(raw[:len(raw)-1])
		m.w.WriteString(",")
		m.w.WriteString(m.meta)
		m.w.WriteString("}")
	} else if raw != nil {
		m.w.Write(raw)
	} else {
		m.w.WriteString(params)
	}
	m.w.WriteString("}\n")
	err := m.w.Flush()
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("%s: server error %s", method, r.err)
		}
		return r.result, nil
	case <-ctx.Done():
		m.mu.Lock()
		delete(m.waiting, id)
		m.mu.Unlock()
		return nil, ctx.Err()
	}
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
	m.stdin.Close()
	<-m.done
	return m.cmd.Wait()
}
