package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
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
	return Unquote(e.Method)
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

// ErrNoOutcome is Scan's error for a message with an id (not null) but
// neither a method, a result nor an error: an answer to that id that
// carries no answer. The Envelope's ID is set; Kind is KindInvalid.
var ErrNoOutcome = errors.New("a response with neither a result nor an error")

// Scan classifies a line without allocating. It checks that the whole
// line is one JSON object (strings and their escapes, numbers, literals,
// nesting) as json.Valid does, and like it does not check UTF-8, which the
// eventual json.Unmarshal of a member replaces. Member names written with
// escapes ("\u0069d") count as their decoded names ("id"); only they cost
// an allocation.
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
	case env.ID != nil:
		return env, ErrNoOutcome
	default:
		return env, errShape
	}
	return env, nil
}

var nullLit = []byte("null")

// Valid reports whether b is exactly one JSON value (surrounded by white
// space at most), with the same verdict as json.Valid but faster on long
// strings and without its per-byte state machine.
func Valid(b []byte) bool {
	return valid(b).ok
}

// valid is Valid, also reporting whether b spans lines (a line break can
// only be white space between tokens: strings cannot hold one unescaped)
// and what kind of value it is.
func valid(b []byte) verdict {
	s := scanner{b: b}
	s.ws()
	start := s.i
	if !s.value(0) {
		return verdict{}
	}
	s.ws()
	return verdict{ok: s.i == len(b), multiline: s.lines, object: b[start] == '{', null: b[start] == 'n', topMeta: s.topMeta}
}

// verdict is what valid found out about a value.
type verdict struct {
	ok        bool // exactly one JSON value
	multiline bool // with a line break between tokens
	object    bool // an object
	null      bool // null
	topMeta   bool // an object with a member that is, or may be, "_meta"
}

type scanner struct {
	b       []byte
	i       int
	lines   bool // white space with a line break was seen ('\n' or '\r')
	escaped bool // the last string consumed has an escape sequence
	// topMeta: a member of the outermost object is named "_meta", or its
	// name has an escape sequence (and so may spell "_meta").
	topMeta bool
}

const maxDepth = 10000

// ws consumes white space. Minified JSON has none between tokens: the
// check for that case is inlined at every call.
func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.wsRun()
}

func (s *scanner) wsRun() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t':
			s.i++
		case '\r', '\n':
			s.lines = true
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

// str consumes a JSON string starting at s.i, and notes whether it has
// an escape sequence.
func (s *scanner) str() bool {
	if !s.eat('"') {
		return false
	}
	s.escaped = false
	for {
		// Skip the plain bytes eight at a time (a short member name or
		// value ends within the first eight), then the last few of the
		// line one at a time.
		i, b := s.i, s.b
		for i+8 <= len(b) {
			if m := stopMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				goto stop
			}
			i += 8
		}
		for i < len(b) && !stringStop[b[i]] {
			i++
		}
	stop:
		s.i = i
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			s.escaped = true
			if !s.escape() {
				return false
			}
		default: // a control character
			return false
		}
	}
}

// stopMask has the high bit of each byte of x (eight string bytes, the
// first in the low byte) set where the byte is a quote, a backslash or a
// control character, and possibly at later bytes too (a borrow): only its
// lowest set bit is exact, which is all str uses.
func stopMask(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (ones * '"')
	backslash := x ^ (ones * '\\')
	return ((quote-ones)&^quote | (backslash-ones)&^backslash | (x-ones*0x20)&^x) & highs
}

// stringStop marks the bytes that end a run of plain string bytes: the
// quote, the backslash and the control characters.
var stringStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// escape consumes one escape sequence inside a string, starting at its
// backslash: \" \\ \/ \b \f \n \r \t or \u and four hex digits.
func (s *scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

// number consumes a JSON number: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.eat('-')
	if s.eat('0') {
		// no further integer digits
	} else if !s.digits() {
		return false
	}
	if s.eat('.') && !s.digits() {
		return false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits consumes one or more decimal digits.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// value consumes one JSON value. depth is how many containers enclose it;
// like encoding/json, at most maxDepth containers may nest.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		if depth >= maxDepth {
			return false
		}
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			s.ws()
			kStart := s.i
			if !s.str() {
				return false
			}
			if depth == 0 && (s.escaped || string(s.b[kStart+1:s.i-1]) == "_meta") {
				s.topMeta = true // (escaped: it may spell _meta)
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
		if depth >= maxDepth {
			return false
		}
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
		return s.number()
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

// Unquote is the Go string a raw JSON string holds ("" for any other
// value): one without escapes (a method or a tool name, almost always)
// is copied at one allocation, not decoded.
func Unquote(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
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
// absent) without decoding the rest of obj. obj must be a JSON object;
// keys written with escapes are compared by their decoded names (the only
// case that allocates).
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
// white space) and calls fn with each member's key (without quotes,
// escapes decoded) and raw value, in order, stopping at fn's first error.
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
			if s.escaped {
				key = []byte(Unquote(b[kStart:s.i]))
			}
			s.ws()
			if !s.eat(':') {
				return errSyntax
			}
			s.ws()
			vStart := s.i
			if !s.value(1) {
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
