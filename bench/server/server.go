// Package server is the near-zero-cost MCP server the comparison runs
// every client against. It speaks both eras over newline-delimited JSON on
// stdio: server/discover (modern, when the request's _meta carries a
// protocol version) and initialize (legacy). Its modern results are
// spec-shaped: each carries resultType and, as spec-following servers
// send them, io.modelcontextprotocol/serverInfo in _meta. One goroutine reads, decodes
// each line into a small struct with encoding/json and writes its answers
// to a buffered writer that is flushed whenever no more input is waiting,
// so pipelined requests are answered in batches.
//
// Tools:
//
//	echo  a tiny text content
//	big   a text content that makes the response line BigLineBytes long
//	ask   one server-to-client round trip: an elicitation/create request
//	      (legacy era) or an input_required result (modern era, MRTR)
//	emit  {"count":N}: N notifications/tools/list_changed on every open
//	      subscriptions/listen stream (modern era), then the result
package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// BigLineBytes is the length of the response line of the big tool,
// newline included: 16 MiB, the default line limit of snodo.
const BigLineBytes = 16 << 20

const (
	modernVersion   = "2026-07-28"
	legacyVersion   = "2025-11-25"
	metaVersionKey  = "io.modelcontextprotocol/protocolVersion"
	metaSubIDKey    = "io.modelcontextprotocol/subscriptionId"
	metaServerInfo  = "io.modelcontextprotocol/serverInfo"
	serverInfoJSON  = `{"name":"benchserver","version":"1.0.0"}`
	capabilitiesObj = `{"tools":{"listChanged":true}}`
	// metaMember is the _meta member a spec-following modern server puts
	// in every result: its identity.
	metaMember = `"_meta":{"` + metaServerInfo + `":` + serverInfoJSON + `}`
)

var knownLegacy = map[string]bool{"2025-11-25": true, "2025-06-18": true, "2025-03-26": true, "2024-11-05": true}

// message is every field the server reads from a line.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			Count int `json:"count"`
		} `json:"arguments"`
		InputResponses  json.RawMessage `json:"inputResponses"`
		RequestState    string          `json:"requestState"`
		ProtocolVersion string          `json:"protocolVersion"`
		RequestID       json.RawMessage `json:"requestId"`
		Notifications   json.RawMessage `json:"notifications"`
		Meta            struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type subscription struct {
	id     []byte
	filter []byte
}

type server struct {
	w       *bufio.Writer
	out     []byte            // scratch line
	big     []byte            // the big tool's text, as a JSON string
	asked   map[string][]byte // server request id → the tools/call id waiting for it
	nextAsk int
	subs    []subscription
	parked  []parkedEmit // emit calls that arrived before any subscription
}

type parkedEmit struct {
	id     []byte
	count  int
	modern bool
}

// Serve answers requests from r on w until r ends.
func Serve(r io.Reader, w io.Writer) error {
	s := &server{w: bufio.NewWriterSize(w, 64<<10), asked: map[string][]byte{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			s.handle(line)
		}
		if err != nil {
			s.w.Flush()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if br.Buffered() == 0 {
			if err := s.w.Flush(); err != nil {
				return err
			}
		}
	}
}

func (s *server) handle(line []byte) {
	var m message
	if json.Unmarshal(line, &m) != nil {
		return
	}
	modern := m.Params.Meta.ProtocolVersion != ""
	switch {
	case m.Method == "" && m.ID != nil: // an answer to one of our requests
		s.answered(m.ID)
	case m.Method == "":
	case m.ID == nil:
		s.notification(&m)
	default:
		s.request(&m, modern)
	}
}

func (s *server) notification(m *message) {
	if m.Method != "notifications/cancelled" || m.Params.RequestID == nil {
		return
	}
	for i, sub := range s.subs {
		if string(sub.id) == string(m.Params.RequestID) {
			s.subs = append(s.subs[:i], s.subs[i+1:]...)
			return
		}
	}
}

func (s *server) request(m *message, modern bool) {
	switch m.Method {
	case "server/discover":
		if !modern {
			s.errorLine(m.ID, -32602, "server/discover needs _meta."+metaVersionKey)
			return
		}
		if m.Params.Meta.ProtocolVersion != modernVersion {
			s.errorData(m.ID, -32022, "unsupported protocol version", `{"supported":["`+modernVersion+`"],"requested":`+strconv.Quote(m.Params.Meta.ProtocolVersion)+`}`)
			return
		}
		s.result(m.ID, `{"resultType":"complete","supportedVersions":["`+modernVersion+`"],"capabilities":`+capabilitiesObj+
			`,"serverInfo":`+serverInfoJSON+`,`+metaMember+`}`)
	case "initialize":
		v := m.Params.ProtocolVersion
		if !knownLegacy[v] {
			v = legacyVersion
		}
		s.result(m.ID, `{"protocolVersion":"`+v+`","capabilities":`+capabilitiesObj+`,"serverInfo":`+serverInfoJSON+`}`)
	case "ping":
		s.result(m.ID, `{}`)
	case "tools/list":
		s.result(m.ID, s.complete(modern, `"tools":[`+
			`{"name":"echo","inputSchema":{"type":"object"}},`+
			`{"name":"big","inputSchema":{"type":"object"}},`+
			`{"name":"ask","inputSchema":{"type":"object"}},`+
			`{"name":"emit","inputSchema":{"type":"object","properties":{"count":{"type":"integer"}}}}]`))
	case "tools/call":
		s.call(m, modern)
	case "subscriptions/listen":
		if !modern {
			s.errorLine(m.ID, -32601, "method not found: subscriptions/listen")
			return
		}
		filter := []byte(m.Params.Notifications)
		if len(filter) == 0 {
			filter = []byte("{}")
		}
		sub := subscription{id: m.ID, filter: filter}
		s.subs = append(s.subs, sub)
		s.out = append(s.out[:0], `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"`+metaSubIDKey+`":`...)
		s.out = append(s.out, sub.id...)
		s.out = append(s.out, `},"notifications":`...)
		s.out = append(s.out, sub.filter...)
		s.out = append(s.out, "}}\n"...)
		s.w.Write(s.out)
		parked := s.parked
		s.parked = nil
		for _, p := range parked {
			s.emit(p.id, p.count, p.modern)
		}
	default:
		s.errorLine(m.ID, -32601, "method not found: "+m.Method)
	}
}

// complete wraps members into a result object, with the resultType the
// modern era requires and the server's identity in _meta.
func (s *server) complete(modern bool, members string) string {
	if modern {
		return `{"resultType":"complete",` + members + `,` + metaMember + `}`
	}
	return `{` + members + `}`
}

const echoContent = `"content":[{"type":"text","text":"hello"}]`

func (s *server) call(m *message, modern bool) {
	switch m.Params.Name {
	case "echo":
		s.result(m.ID, s.complete(modern, echoContent))
	case "big":
		s.bigResult(m.ID, modern)
	case "ask":
		s.ask(m, modern)
	case "emit":
		if modern && len(s.subs) == 0 {
			s.parked = append(s.parked, parkedEmit{id: m.ID, count: m.Params.Arguments.Count, modern: modern})
			return
		}
		s.emit(m.ID, m.Params.Arguments.Count, modern)
	default:
		s.errorLine(m.ID, -32602, "unknown tool: "+m.Params.Name)
	}
}

const elicitParams = `{"mode":"form","message":"continue?","requestedSchema":{"type":"object","properties":{}}}`

func (s *server) ask(m *message, modern bool) {
	if !modern {
		s.nextAsk++
		id := `"s` + strconv.Itoa(s.nextAsk) + `"`
		s.asked[id] = m.ID
		s.out = append(s.out[:0], `{"jsonrpc":"2.0","id":`...)
		s.out = append(s.out, id...)
		s.out = append(s.out, `,"method":"elicitation/create","params":`+elicitParams+"}\n"...)
		s.w.Write(s.out)
		return
	}
	if len(m.Params.InputResponses) == 0 {
		s.result(m.ID, `{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":`+elicitParams+`}},"requestState":"st1",`+metaMember+`}`)
		return
	}
	s.result(m.ID, s.complete(modern, echoContent))
}

// answered completes the tools/call that was waiting for the client's
// answer to our server request id.
func (s *server) answered(id json.RawMessage) {
	call, ok := s.asked[string(id)]
	if !ok {
		return
	}
	delete(s.asked, string(id))
	s.result(call, `{`+echoContent+`}`)
}

func (s *server) emit(id []byte, count int, modern bool) {
	for _, sub := range s.subs {
		s.out = append(s.out[:0], `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"`+metaSubIDKey+`":`...)
		s.out = append(s.out, sub.id...)
		s.out = append(s.out, "}}}\n"...)
		for range count {
			s.w.Write(s.out)
		}
	}
	s.result(id, s.complete(modern, `"content":[{"type":"text","text":"`+strconv.Itoa(count*len(s.subs))+`"}]`))
}

func (s *server) bigResult(id []byte, modern bool) {
	head := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{`
	if modern {
		head += `"resultType":"complete",`
	}
	head += `"content":[{"type":"text","text":"`
	tail := "\"}]}}\n"
	if modern {
		tail = `"}],` + metaMember + "}}\n"
	}
	n := BigLineBytes - len(head) - len(tail)
	if len(s.big) != n {
		s.big = make([]byte, n)
		for i := range s.big {
			s.big[i] = 'a' + byte(i%26)
		}
	}
	s.w.WriteString(head)
	s.w.Write(s.big)
	s.w.WriteString(tail)
}

func (s *server) result(id []byte, result string) {
	s.out = append(s.out[:0], `{"jsonrpc":"2.0","id":`...)
	s.out = append(s.out, id...)
	s.out = append(s.out, `,"result":`...)
	s.out = append(s.out, result...)
	s.out = append(s.out, "}\n"...)
	s.w.Write(s.out)
}

func (s *server) errorLine(id []byte, code int, msg string) { s.errorData(id, code, msg, "") }

func (s *server) errorData(id []byte, code int, msg, data string) {
	s.out = append(s.out[:0], `{"jsonrpc":"2.0","id":`...)
	s.out = append(s.out, id...)
	s.out = append(s.out, `,"error":{"code":`...)
	s.out = strconv.AppendInt(s.out, int64(code), 10)
	s.out = append(s.out, `,"message":`...)
	s.out = strconv.AppendQuote(s.out, msg)
	if data != "" {
		s.out = append(s.out, `,"data":`...)
		s.out = append(s.out, data...)
	}
	s.out = append(s.out, "}}\n"...)
	s.w.Write(s.out)
}
