package testserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// defaultEOFGrace bounds how long the server waits for in-flight requests
// at EOF (flag -eof-grace).
const defaultEOFGrace = 5 * time.Second

// server is one running instance of the test server.
type server struct {
	pages  atomic.Int64 // -endless-pages fresh: the last cursor handed out
	cfg    config
	in     io.Reader
	stdout io.Writer
	stderr io.Writer
	exit   func(int)

	wmu       sync.Mutex // guards bw, outClosed and every stdout write
	bw        *bufio.Writer
	outClosed bool

	emu sync.Mutex // serialises stderr writes

	inflight sync.WaitGroup
	cmu      sync.Mutex
	cancels  map[string]context.CancelFunc

	journal journal
	peer    peer
	subs    subTable
	legacy  legacySubs
	tasks   taskTable
}

// Main runs the test server with the given arguments and standard streams
// and returns the process exit status. Some scripted methods (test/crash,
// test/exit, test/stopReading, test/closeStdin, -exit-on-discover) end the
// process directly with os.Exit or a signal.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	s := &server{
		cfg:     cfg,
		in:      stdin,
		stdout:  stdout,
		stderr:  stderr,
		exit:    os.Exit,
		bw:      bufio.NewWriterSize(stdout, 64<<10),
		cancels: make(map[string]context.CancelFunc),
	}
	s.journal.init(s.cfg.journalFile)
	s.peer.init(s)
	s.subs.init(s)
	s.startup()
	return s.run()
}

// run is the reading loop. It returns the exit status at stdin EOF.
func (s *server) run() int {
	r := bufio.NewReaderSize(s.in, 64<<10)
	var long []byte
	unflushed := false
	for {
		if unflushed && !lineBuffered(r) {
			s.flush()
			unflushed = false
		}
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			if s.cfg.fast && s.fastEcho(line) {
				unflushed = true
			} else {
				s.handleLine(line)
			}
		}
		if cap(long) > 1<<20 {
			long = nil
		}
		if err != nil {
			break
		}
	}
	if unflushed {
		s.flush()
	}
	if s.cfg.ignoreEOF {
		for {
			time.Sleep(time.Hour)
		}
	}
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.eofGrace):
	}
	s.flush()
	return 0
}

// lineBuffered reports whether a complete line is already buffered in r.
func lineBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// inMsg is any incoming JSON-RPC message. RawMessage fields are nil when the
// member is absent and "null" when it is JSON null.
type inMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// handleLine parses and routes one incoming line. line may alias the
// reader's buffer and is only valid during the call.
func (s *server) handleLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var m inMsg
	if err := json.Unmarshal(line, &m); err != nil {
		s.replyError(nil, &rpcError{Code: -32700, Message: "parse error"})
		return
	}
	switch {
	case m.Method != "" && m.ID == nil:
		s.handleNotification(m.Method, m.Params)
	case m.Method != "":
		s.startRequest(&m)
	case m.Result != nil || m.Error != nil:
		s.peer.deliver(m.ID, bytes.Clone(line))
	default:
		s.replyError(m.ID, &rpcError{Code: -32600, Message: "invalid request"})
	}
}

// handleNotification records a client notification and applies cancellation.
func (s *server) handleNotification(method string, params json.RawMessage) {
	s.journal.addNotification(method, params)
	if method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	key := idKey(p.RequestID)
	s.subs.cancel(key)
	s.cmu.Lock()
	cancel := s.cancels[key]
	s.cmu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// startRequest records a request and runs it, inline for the methods that
// must act on the reading goroutine and in a new goroutine otherwise.
func (s *server) startRequest(m *inMsg) {
	s.journal.addRequest(m.Method, m.ID, m.Params)
	req := &request{id: m.ID, method: m.Method, params: m.Params}
	req.meta = parseMeta(m.Params)
	req.modern = s.isModern(req)
	switch m.Method {
	case "test/closeStdin":
		s.reply(req, obj{}, nil)
		if c, ok := s.in.(io.Closer); ok {
			_ = c.Close()
		}
		time.Sleep(30 * time.Second)
		s.exit(0)
		return
	case "test/stopReading":
		s.reply(req, obj{}, nil)
		time.Sleep(60 * time.Second)
		s.exit(0)
		return
	case "test/floodRequests":
		s.floodRequests(req)
		return
	case "test/pauseReading":
		var p struct {
			Ms int `json:"ms"`
		}
		if e := unmarshalParams(req, &p); e != nil {
			s.reply(req, nil, e)
			return
		}
		s.reply(req, obj{}, nil)
		time.Sleep(time.Duration(p.Ms) * time.Millisecond)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	req.ctx = ctx
	key := idKey(m.ID)
	s.cmu.Lock()
	s.cancels[key] = cancel
	s.cmu.Unlock()
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		defer func() {
			s.cmu.Lock()
			delete(s.cancels, key)
			s.cmu.Unlock()
			cancel()
		}()
		res, rerr := s.dispatch(req)
		s.reply(req, res, rerr)
	}()
}

// stderrf writes a formatted message to stderr under the stderr mutex.
func (s *server) stderrf(format string, args ...any) {
	s.emu.Lock()
	defer s.emu.Unlock()
	fmt.Fprintf(s.stderr, format, args...)
}

// idKey canonicalises a JSON-RPC id so that equal ids compare equal.
func idKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return string(encode(v))
}
