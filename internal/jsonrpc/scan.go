package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Kind classifies one incoming line.
type Kind uint8

// The kinds of JSON-RPC message a line can hold.
const (
	KindInvalid      Kind = iota // not a JSON-RPC message
	KindRequest                  // method and id
	KindNotification             // method, no id
	KindResponse                 // id and result or error, no method
)

// String names the kind for logs.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// Envelope holds views into one message's top-level members. The slices
// alias the scanned line: copy what must outlive it.
type Envelope struct {
	Kind   Kind
	ID     []byte // raw JSON id; nil when absent, or null outside a request
	Method []byte // raw JSON string including quotes; nil when absent
	Params []byte // raw JSON value; nil when absent
	Result []byte
	Error  []byte
}

// MethodName returns the method as a Go string (unquoting escapes if any).
func (e *Envelope) MethodName() string {
	return unquote(e.Method)
}

// IntID returns the id as an int64 when it is a plain JSON integer.
func (e *Envelope) IntID() (int64, bool) { return ParseIntID(e.ID) }

// ParseIntID parses a raw JSON id that is a non-negative integer.
func ParseIntID(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// Errors from Scan.
var (
	errNotObject = errors.New("not a JSON object")
	errSyntax    = errors.New("malformed JSON")
	errShape     = errors.New("not a JSON-RPC message (needs a method, or an id with a result or an error)")
)

// Scan classifies a line without allocating. It checks the structure of
// the whole line (strings, nesting, literals) but not number grammar or
// UTF-8, which the eventual json.Unmarshal of a member does.
func Scan(line []byte) (Envelope, error) {
	var env Envelope
	var nullID bool
	err := eachMember(line, func(key, val []byte) error {
		switch string(key) { // no allocation: compiler-optimised comparison
		case "id":
			if bytes.Equal(val, nullLit) {
				nullID = true
			} else {
				env.ID = val
			}
		case "method":
			if val[0] != '"' {
				return errShape
			}
			env.Method = val
		case "params":
			env.Params = val
		case "result":
			env.Result = val
		case "error":
			env.Error = val
		}
		return nil
	})
	if err != nil {
		return env, err
	}
	switch {
	case env.Method != nil && nullID && env.ID == nil:
		// A request with a null id (JSON-RPC allows it, MCP does not):
		// keep it a request so that it is answered with an error, not
		// mistaken for a notification and ignored.
		env.ID = nullLit
		env.Kind = KindRequest
	case env.Method != nil && env.ID != nil:
		env.Kind = KindRequest
	case env.Method != nil:
		env.Kind = KindNotification
	case env.ID != nil && (env.Result != nil || env.Error != nil):
		env.Kind = KindResponse
	default:
		return env, errShape
	}
	return env, nil
}

var nullLit = []byte("null")

type scanner struct {
	b []byte
	i int
}

const maxDepth = 10000

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str consumes a JSON string starting at s.i.
func (s *scanner) str() bool {
	if !s.eat('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			s.i += 2
		case c < 0x20:
			return false
		default:
			// Skip a run of plain bytes quickly.
			j := bytes.IndexAny(s.b[s.i:], "\"\\")
			if j < 0 {
				return false
			}
			for _, x := range s.b[s.i : s.i+j] {
				if x < 0x20 {
					return false
				}
			}
			s.i += j
		}
	}
	return false
}

func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			s.ws()
			if !s.str() {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '-', '+', '.', 'e', 'E':
				s.i++
				continue
			}
			break
		}
		return s.i > start
	}
	return false
}

func (s *scanner) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// unquote turns a raw JSON string into a Go string.
func unquote(raw []byte) string {
	if len(raw) < 2 {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(inner)
	}
	return s
}

// Member returns the raw value of obj's top-level member key (nil when
// absent) without decoding the rest of obj or allocating. obj must be a
// JSON object; keys with escapes are compared as written.
func Member(obj []byte, key string) ([]byte, error) {
	var found []byte
	err := eachMember(obj, func(k, val []byte) error {
		if found == nil && string(k) == key {
			found = val
		}
		return nil
	})
	return found, err
}

// eachMember checks that b is one JSON object (surrounded by nothing but
// white space) and calls fn with each member's raw key (without quotes)
// and raw value, in order, stopping at fn's first error.
func eachMember(b []byte, fn func(key, val []byte) error) error {
	s := scanner{b: b}
	s.ws()
	if !s.eat('{') {
		return errNotObject
	}
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			kStart := s.i
			if !s.str() {
				return errSyntax
			}
			key := b[kStart+1 : s.i-1]
			s.ws()
			if !s.eat(':') {
				return errSyntax
			}
			s.ws()
			vStart := s.i
			if !s.value(0) {
				return errSyntax
			}
			if err := fn(key, b[vStart:s.i]); err != nil {
				return err
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return errSyntax
		}
	}
	s.ws()
	if s.i != len(b) {
		return errSyntax
	}
	return nil
}
