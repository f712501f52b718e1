package testserver

import (
	"bytes"
	"encoding/json"
	"strings"
)

// obj is a JSON object under construction.
type obj = map[string]any

// noAnswer is returned by a handler that must not send a response.
type noAnswerT struct{}

var noAnswer any = noAnswerT{}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func errorf(code int, msg string) *rpcError { return &rpcError{Code: code, Message: msg} }

func errMethodNotFound(method string) *rpcError {
	return errorf(-32601, "method not found: "+method)
}

func errInvalidParams(msg string) *rpcError { return errorf(-32602, msg) }

// encode marshals v without HTML escaping; json.RawMessage and []byte are
// returned unchanged.
func encode(v any) []byte {
	switch b := v.(type) {
	case json.RawMessage:
		if b == nil {
			return []byte("null")
		}
		return b
	case []byte:
		return b
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// writeLine writes one line (a newline is appended) and flushes.
func (s *server) writeLine(line []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writeLocked(line)
	s.writeLocked([]byte("\n"))
	s.flushLocked()
}

// writeLocked writes b; the caller holds wmu.
func (s *server) writeLocked(b []byte) {
	if s.outClosed {
		return
	}
	_, _ = s.bw.Write(b)
}

func (s *server) flushLocked() {
	if s.outClosed {
		return
	}
	_ = s.bw.Flush()
}

func (s *server) flush() {
	s.wmu.Lock()
	s.flushLocked()
	s.wmu.Unlock()
}

// responseLine builds a success response line (without newline).
func responseLine(id json.RawMessage, result []byte) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b := make([]byte, 0, len(id)+len(result)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// errorLine builds an error response line (without newline).
func errorLine(id json.RawMessage, e *rpcError) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":`...)
	b = append(b, encode(e)...)
	return append(b, '}')
}

// reply sends the outcome of a handler unless it is noAnswer.
func (s *server) reply(req *request, res any, e *rpcError) {
	if e != nil {
		s.replyError(req.id, e)
		return
	}
	if res == noAnswer {
		return
	}
	if req.modern && !strings.HasPrefix(req.method, "test/") {
		if m, ok := res.(obj); ok {
			if _, has := m["resultType"]; !has {
				m["resultType"] = "complete"
			}
			if !s.cfg.noResultMeta {
				withServerInfo(m)
			}
		}
	}
	s.writeLine(responseLine(req.id, encode(res)))
}

// withServerInfo puts the server's identity in a modern result's _meta,
// as spec-following servers do on every result, keeping what the handler
// put there.
func withServerInfo(m obj) {
	switch meta := m["_meta"].(type) {
	case nil:
		m["_meta"] = obj{metaServerInfo: serverInfo()}
	case obj:
		if _, has := meta[metaServerInfo]; !has {
			meta[metaServerInfo] = serverInfo()
		}
	}
}

func (s *server) replyError(id json.RawMessage, e *rpcError) {
	s.writeLine(errorLine(id, e))
}

// notificationLine builds a notification line; params may be nil.
func notificationLine(method string, params any) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","method":`), encode(method)...)
	if params != nil {
		if raw, ok := params.(json.RawMessage); !ok || raw != nil {
			b = append(b, `,"params":`...)
			b = append(b, encode(params)...)
		}
	}
	return append(b, '}')
}

// notify sends a notification.
func (s *server) notify(method string, params any) {
	s.writeLine(notificationLine(method, params))
}

// closeStdout closes stdout (if it can be closed); later writes are dropped.
func (s *server) closeStdout() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.flushLocked()
	s.outClosed = true
	if c, ok := s.stdout.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
