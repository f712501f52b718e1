package snodo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// Typed results without encoding/json. A tools/call result nearly always
// has one shape: content blocks of strings (a text block, an image's
// data), maybe isError, structuredContent and resultType. decodeCallTool
// reads that shape with the zero-allocation member walker, so a call
// with a small text result costs the result, its content slice and its
// strings, not encoding/json's reflection. Anything else — a member it
// does not read (annotations, an embedded resource, _meta on a block), a
// key written with escapes or in another case, a repeated key, a value of
// an unexpected type — goes to json.Unmarshal, so the outcome is the same
// either way, errors included.
//
// The line a result came from belongs to the caller alone (the reader
// hands over a copy, or for large answers its own buffer), and nothing
// writes to it afterwards. A string of aliasBytes or more is therefore not
// copied: escapes, if any, are decoded in place (the decoded form is never
// longer) and the string points into the line. A 16 MiB text then costs
// the line and nothing more.

// aliasBytes is the string length from which decoded strings share the
// result's bytes instead of copying them.
const aliasBytes = 64 << 10

// shareLineBytes: in a result of at most this many bytes every string
// without escapes shares the result's bytes, so a small result costs no
// allocation per string. A string kept longer than its result then keeps
// at most this many bytes alive.
const shareLineBytes = 4 << 10

// errSlowPath: the result is not of the shape the fast path reads.
var errSlowPath = errors.New("not the common shape")

// decodeCallTool decodes a tools/call result into res, whose content
// blocks go into spare's room when they fit (CallTool's one allocation
// for a call's params and result has room for one).
func decodeCallTool(raw []byte, res *CallToolResult, spare []Content) error {
	// A first pass only looks (the fast path must not change the bytes
	// json.Unmarshal may yet need); the second decodes.
	// Once the shape is known the second pass cannot meet anything it
	// does not read, and it may have decoded escapes in place: its error,
	// if any, is the answer (json.Unmarshal would fail on the same value).
	if blocks, ok := callToolShape(raw); ok {
		switch {
		case blocks > 0 && blocks <= cap(spare):
			res.Content = spare[:0]
		case blocks > 0:
			res.Content = make([]Content, 0, blocks)
		}
		return walkCallTool(raw, res, nil)
	}
	return json.Unmarshal(raw, res)
}

// callToolShape reports whether the fast path reads raw exactly as
// json.Unmarshal would, and how many content blocks it holds.
func callToolShape(raw []byte) (blocks int, ok bool) {
	ok = walkCallTool(raw, nil, &blocks) == nil
	return blocks, ok
}

// Members of a result and of a content block, as bits of a seen mask.
const (
	mContent = 1 << iota
	mStructured
	mIsError
	mMeta
	mResultType
)

var resultKeys = [...]string{"content", "structuredContent", "isError", "_meta", "resultType"}

const (
	bType = 1 << iota
	bText
	bData
	bMimeType
	bURI
	bName
	bTitle
	bDescription
	bResource
	bSize
	bAnnotations
	bMeta
)

var blockKeys = [...]string{"type", "text", "data", "mimeType", "uri", "name", "title", "description", "resource", "size", "annotations", "_meta"}

// walkCallTool reads raw into res. With count set (and res nil) it only
// checks the shape and counts the content blocks: nothing is decoded or
// allocated.
func walkCallTool(raw []byte, res *CallToolResult, count *int) error {
	dry := count != nil
	var seen uint
	return jsonrpc.EachMember(raw, func(key, val []byte) error {
		bit := keyBit(key, resultKeys[:])
		if bit == 0 {
			return nil // a member CallToolResult does not have: ignored, as json.Unmarshal does
		}
		if bit < 0 || seen&uint(bit) != 0 {
			return errSlowPath
		}
		seen |= uint(bit)
		switch bit {
		case mContent:
			if isNull(val) {
				return nil
			}
			if !dry && res.Content == nil {
				res.Content = []Content{} // [] is an empty slice, not nil (no allocation)
			}
			return jsonrpc.EachElement(val, func(block []byte) error {
				if dry {
					*count++
					return checkBlock(block)
				}
				res.Content = append(res.Content, Content{})
				return decodeBlock(block, &res.Content[len(res.Content)-1], len(raw) <= shareLineBytes)
			})
		case mStructured:
			if !dry {
				// null too, as json.RawMessage does. The full slice
				// expression keeps an append from writing into the bytes
				// that follow, which a long string may share.
				res.StructuredContent = json.RawMessage(val[:len(val):len(val)])
			}
		case mIsError:
			switch string(val) {
			case "true", "false":
				if !dry {
					res.IsError = string(val) == "true"
				}
			case "null":
			default:
				return errSlowPath
			}
		case mMeta:
			switch {
			case val[0] != '{' && !isNull(val):
				return errSlowPath // json.Unmarshal says what is wrong
			case !dry:
				// null too, as json.RawMessage does; shared, as
				// StructuredContent is.
				res.Meta = json.RawMessage(val[:len(val):len(val)])
			}
		}
		return nil
	})
}

// checkBlock reports errSlowPath unless decodeBlock reads block exactly.
func checkBlock(block []byte) error {
	if len(block) == 0 || block[0] != '{' {
		return errSlowPath
	}
	var seen uint
	return jsonrpc.EachMember(block, func(key, val []byte) error {
		bit := keyBit(key, blockKeys[:])
		if bit == 0 {
			return nil
		}
		if bit < 0 || bit >= bResource || seen&uint(bit) != 0 {
			return errSlowPath // resource, size, annotations, _meta: json.Unmarshal
		}
		seen |= uint(bit)
		if !isNull(val) && val[0] != '"' {
			return errSlowPath
		}
		if bit == bData && bytes.IndexByte(val, '\\') >= 0 {
			return errSlowPath // base64 written with escapes: json.Unmarshal
		}
		return nil
	})
}

// decodeBlock decodes a block checkBlock accepted; share: its strings
// may share the result's bytes however short (see shareLineBytes).
func decodeBlock(block []byte, c *Content, share bool) error {
	return jsonrpc.EachMember(block, func(key, val []byte) error {
		var dst *string
		switch keyBit(key, blockKeys[:]) {
		case bType:
			if s, ok := blockTypes[string(val)]; ok { // no allocation for the usual types
				c.Type = s
				return nil
			}
			dst = &c.Type
		case bText:
			dst = &c.Text
		case bData:
			if !isNull(val) {
				return decodeBase64(val, &c.Data)
			}
			return nil
		case bMimeType:
			dst = &c.MimeType
		case bURI:
			dst = &c.URI
		case bName:
			dst = &c.Name
		case bTitle:
			dst = &c.Title
		case bDescription:
			dst = &c.Description
		default:
			return nil
		}
		if isNull(val) {
			return nil
		}
		s, err := decodeString(val, share)
		*dst = s
		return err
	})
}

// malformedResult is the error of a typed call (what: its method and
// target) whose result did not decode: err says why, and for base64 data
// that is not standard base64, where the error says only at which byte,
// it is named.
func malformedResult(what string, err error) error {
	var bad base64.CorruptInputError
	if errors.As(err, &bad) {
		return fmt.Errorf("snodo: %s: malformed result: a base64 member (an image's or audio's data, a resource's blob) is not standard base64: %w", what, err)
	}
	return fmt.Errorf("snodo: %s: malformed result: %w", what, err)
}

// decodeBase64 decodes a raw JSON string without escapes (quotes
// included) into *dst as json.Unmarshal decodes a []byte: standard
// base64, its error base64's own.
func decodeBase64(val []byte, dst *[]byte) error {
	inner := val[1 : len(val)-1]
	b := make([]byte, base64.StdEncoding.DecodedLen(len(inner)))
	n, err := base64.StdEncoding.Decode(b, inner)
	if err != nil {
		return err
	}
	*dst = b[:n]
	return nil
}

var blockTypes = map[string]string{
	`"text"`: "text", `"image"`: "image", `"audio"`: "audio", `"resource"`: "resource", `"resource_link"`: "resource_link",
}

// keyBit is the bit of key among keys (1 << index); 0 for a key json.Unmarshal
// would ignore; -1 for one only json.Unmarshal can place (escapes, or a
// known key in another case, which encoding/json matches too).
func keyBit(key []byte, keys []string) int {
	for i, k := range keys {
		if string(key) == k {
			return 1 << i
		}
	}
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf { // escapes; non-ASCII may fold to ASCII (K, ſ)
			return -1
		}
	}
	for _, k := range keys {
		if asciiEqualFold(key, k) {
			return -1
		}
	}
	return 0
}

// asciiEqualFold compares ASCII a and b ignoring case.
func asciiEqualFold(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func isNull(val []byte) bool { return string(val) == "null" }

// decodeString decodes a raw JSON string (quotes included) as
// json.Unmarshal does, invalid UTF-8 and lone surrogates becoming U+FFFD.
// Short strings are copied unless share is set and they hold no escape;
// long ones share val's bytes (see aliasBytes).
func decodeString(val []byte, share bool) (string, error) {
	inner := val[1 : len(val)-1]
	plain := bytes.IndexByte(inner, '\\') < 0
	if len(inner) < aliasBytes {
		if plain && utf8.Valid(inner) {
			if share {
				return unsafe.String(unsafe.SliceData(inner), len(inner)), nil
			}
			return string(inner), nil
		}
		var s string
		err := json.Unmarshal(val, &s)
		return s, err
	}
	if !utf8.Valid(inner) || (!plain && !validEscapes(inner)) {
		var s string
		err := json.Unmarshal(val, &s)
		return s, err
	}
	if !plain {
		inner = unescapeInPlace(inner)
	}
	return unsafe.String(unsafe.SliceData(inner), len(inner)), nil
}

// validEscapes reports whether every escape in s is one JSON allows.
func validEscapes(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i+1 >= len(s) {
			return false
		}
		switch s[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if _, ok := hex4(s[i+2:]); !ok {
				return false
			}
			i += 5
		default:
			return false
		}
	}
	return true
}

// unescapeInPlace decodes the escapes of s (checked by validEscapes) into
// s's own bytes, as encoding/json decodes them, and returns the decoded
// prefix. Every escape decodes to no more bytes than it takes.
func unescapeInPlace(s []byte) []byte {
	w := 0
	for r := 0; r < len(s); {
		c := s[r]
		if c != '\\' {
			// Copy the run up to the next escape at once.
			n := bytes.IndexByte(s[r:], '\\')
			if n < 0 {
				n = len(s) - r
			}
			w += copy(s[w:], s[r:r+n])
			r += n
			continue
		}
		switch e := s[r+1]; e {
		case 'u':
			first, _ := hex4(s[r+2:])
			r += 6
			rr := first
			if utf16.IsSurrogate(first) {
				rr = utf8.RuneError // a lone surrogate, as encoding/json decodes it
				if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
					if second, ok := hex4(s[r+2:]); ok {
						if dec := utf16.DecodeRune(first, second); dec != utf8.RuneError {
							rr = dec
							r += 6
						}
					}
				}
			}
			w += utf8.EncodeRune(s[w:], rr)
		default:
			s[w] = unescapeByte[e]
			w++
			r += 2
		}
	}
	return s[:w]
}

var unescapeByte = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 parses the four hex digits at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
