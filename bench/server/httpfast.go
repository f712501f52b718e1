package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/snodo/snodo/bench/internal/wire"
)

// HTTPFast is the Streamable HTTP server that is never the bottleneck: a
// hand-written HTTP/1.1 server over TCP (one goroutine per connection,
// keep-alive, no net/http) that answers from canned bodies with the
// request's id spliced in, finding each body's top-level id and method
// and decoding nothing else on the calls' path. It serves both eras at
// once, as the request says:
//
//   - modern (2026-07-28): stateless POSTs, no session; results carry
//     resultType and, as spec-following modern servers send them,
//     io.modelcontextprotocol/serverInfo in _meta; subscriptions/listen
//     is a POST answered by an SSE stream (chunked) that stays open.
//   - legacy (2025-11-25): initialize answers with an Mcp-Session-Id;
//     every later request carries it (it is what marks the legacy era
//     here: a request with an Mcp-Session-Id gets the legacy results).
//     The optional GET stream is refused (405), as the transport allows;
//     DELETE ends nothing and answers 200.
//
// Notifications and answers get 202. Tools: echo (any tool name but
// emit: "hello"), and emit {"count":N}, which writes N
// notifications/tools/list_changed on every open listen stream, then
// answers with the number written (a call that finds no stream open
// waits up to 10 s for one).
type HTTPFast struct {
	mu      sync.Mutex
	subs    map[*sseStream]struct{}
	subOpen chan struct{} // closed and replaced when a stream opens
}

// NewHTTPFast returns the server, to be given listeners with Serve.
func NewHTTPFast() *HTTPFast {
	return &HTTPFast{subs: map[*sseStream]struct{}{}, subOpen: make(chan struct{})}
}

// Serve accepts connections on l until it is closed.
func (s *HTTPFast) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		go s.conn(c)
	}
}

// sseStream is one open subscriptions/listen stream.
type sseStream struct {
	mu sync.Mutex
	w  *bufio.Writer
	id []byte // the listen request's id
}

// chunk writes data as one HTTP chunk and flushes.
func (st *sseStream) chunk(data []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.w.WriteString(strconv.FormatInt(int64(len(data)), 16))
	st.w.WriteString("\r\n")
	st.w.Write(data)
	st.w.WriteString("\r\n")
	return st.w.Flush()
}

// request is what the server reads of one HTTP request.
type request struct {
	method  []byte
	session bool
	length  int
	chunked bool
	body    []byte
}

func (s *HTTPFast) conn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 16<<10)
	bw := bufio.NewWriterSize(c, 16<<10)
	var req request
	var out []byte
	for {
		if err := readRequest(br, &req); err != nil {
			return
		}
		switch string(req.method) {
		case "POST":
		case "DELETE":
			out = appendResponse(out[:0], "200 OK", "", "", nil)
			goto write
		default: // GET: no standalone stream here
			out = appendResponse(out[:0], "405 Method Not Allowed", "", "", nil)
			goto write
		}
		{
			m := wire.Top(req.body)
			if m.ID == nil || m.Method == nil {
				out = appendResponse(out[:0], "202 Accepted", "", "", nil)
				goto write
			}
			switch string(m.Method) {
			case "subscriptions/listen":
				s.listen(c, br, bw, m.ID, req.body)
				return // the stream held the connection to its end
			case "tools/call":
				if bytes.Contains(req.body, []byte(`"emit"`)) {
					out = s.emit(out[:0], m.ID, req.body, req.session)
					goto write
				}
			}
			out = fastAnswer(out[:0], string(m.Method), m.ID, req.session)
		}
	write:
		if _, err := bw.Write(out); err != nil {
			return
		}
		if err := bw.Flush(); err != nil {
			return
		}
	}
}

var errBadRequest = errors.New("bad request")

// readRequest reads one request: its method, the headers it needs, and
// its body (Content-Length or chunked).
func readRequest(br *bufio.Reader, r *request) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return errBadRequest
	}
	r.method = append(r.method[:0], line[:sp]...)
	r.session, r.length, r.chunked = false, 0, false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return errBadRequest
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 {
				return errBadRequest
			}
			r.length = n
		case asciiEqualFold(name, "mcp-session-id"):
			r.session = len(value) > 0
		case asciiEqualFold(name, "transfer-encoding"):
			r.chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		}
	}
	r.body = r.body[:0]
	if !r.chunked {
		if cap(r.body) < r.length {
			r.body = make([]byte, r.length)
		}
		r.body = r.body[:r.length]
		_, err := io.ReadFull(br, r.body)
		return err
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(line), 16, 32)
		if err != nil || n < 0 {
			return errBadRequest
		}
		if n == 0 {
			for { // trailers, up to the empty line
				line, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		start := len(r.body)
		r.body = append(r.body, make([]byte, n)...)
		if _, err := io.ReadFull(br, r.body[start:]); err != nil {
			return err
		}
		if _, err := br.Discard(2); err != nil {
			return err
		}
	}
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// appendResponse appends a whole response: status, the headers, body.
func appendResponse(out []byte, status, contentType, session string, body []byte) []byte {
	out = append(out, "HTTP/1.1 "...)
	out = append(out, status...)
	out = append(out, "\r\n"...)
	if contentType != "" {
		out = append(out, "Content-Type: "...)
		out = append(out, contentType...)
		out = append(out, "\r\n"...)
	}
	if session != "" {
		out = append(out, "Mcp-Session-Id: "...)
		out = append(out, session...)
		out = append(out, "\r\n"...)
	}
	out = append(out, "Content-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n\r\n"...)
	return append(out, body...)
}

// jsonHead is the status line and the headers of every JSON answer but
// the body's length.
const jsonHead = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "

// fastAnswer appends the answer to request method with id: the canned
// body of the stdio fast server (ServeFast), the era's, without its
// newline.
func fastAnswer(out []byte, method string, id []byte, legacy bool) []byte {
	var rest, session string
	switch method {
	case "tools/call":
		if rest = fastEchoModern; legacy {
			rest = fastEchoLegacy
		}
	case "server/discover":
		rest = fastDiscoverRest
	case "initialize":
		rest, session = fastInitRest, newSession()
	case "ping":
		rest = fastEmpty
	case "tools/list":
		if rest = fastToolsModern; legacy {
			rest = `,"result":{` + fastTools + "}}\n"
		}
	default:
		rest = fastNotFound
	}
	rest = rest[:len(rest)-1] // the newline of the stdio form
	n := len(fastHead) + len(id) + len(rest)
	if session == "" {
		out = append(out, jsonHead...)
	} else {
		out = append(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: "+session+"\r\nContent-Length: "...)
	}
	out = strconv.AppendInt(out, int64(n), 10)
	out = append(out, "\r\n\r\n"...)
	out = append(out, fastHead...)
	out = append(out, id...)
	return append(out, rest...)
}

func newSession() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// listen answers subscriptions/listen: an SSE stream, its first event
// the acknowledgement, open until the client closes the connection.
func (s *HTTPFast) listen(c net.Conn, br *bufio.Reader, bw *bufio.Writer, id, body []byte) {
	var p struct {
		Params struct {
			Notifications json.RawMessage `json:"notifications"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &p)
	filter := []byte(p.Params.Notifications)
	if len(filter) == 0 {
		filter = []byte("{}")
	}
	bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
	st := &sseStream{w: bw, id: bytes.Clone(id)}
	ack := []byte(`data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"` + metaSubIDKey + `":`)
	ack = append(ack, id...)
	ack = append(ack, `},"notifications":`...)
	ack = append(ack, filter...)
	ack = append(ack, "}}\n\n"...)
	if st.chunk(ack) != nil {
		return
	}
	s.mu.Lock()
	s.subs[st] = struct{}{}
	close(s.subOpen)
	s.subOpen = make(chan struct{})
	s.mu.Unlock()
	// The client ends the stream by closing the connection.
	_, _ = io.Copy(io.Discard, br)
	s.mu.Lock()
	delete(s.subs, st)
	s.mu.Unlock()
}

// emit writes the events of an emit call on every open stream and
// appends the call's answer.
func (s *HTTPFast) emit(out, id, body []byte, legacy bool) []byte {
	var p struct {
		Params struct {
			Arguments struct {
				Count int `json:"count"`
			} `json:"arguments"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &p)
	count := p.Params.Arguments.Count
	deadline := time.After(10 * time.Second)
	var subs []*sseStream
	for {
		s.mu.Lock()
		for st := range s.subs {
			subs = append(subs, st)
		}
		opened := s.subOpen
		s.mu.Unlock()
		if len(subs) > 0 || legacy {
			break
		}
		select {
		case <-opened:
			continue
		case <-deadline:
		}
		break
	}
	written := 0
	for _, st := range subs {
		event := `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"` + metaSubIDKey + `":` + string(st.id) + "}}}\n\n"
		buf := make([]byte, 0, count*len(event))
		for range count {
			buf = append(buf, event...)
		}
		if st.chunk(buf) == nil {
			written += count
		}
	}
	text := strconv.Itoa(written)
	var b []byte
	b = append(b, fastHead...)
	b = append(b, id...)
	if legacy {
		b = append(b, `,"result":{"content":[{"type":"text","text":"`+text+`"}]}}`...)
	} else {
		b = append(b, `,"result":{"resultType":"complete","content":[{"type":"text","text":"`+text+`"}],`+metaMember+`}}`...)
	}
	return appendResponse(out, "200 OK", "application/json", "", b)
}
