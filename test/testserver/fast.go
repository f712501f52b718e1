package testserver

import "bytes"

// The -fast path: test/echo answered on the reading goroutine without
// decoding the message.

var (
	fastMethod = []byte(`"test/echo"`)
	fastHead   = []byte(`{"jsonrpc":"2.0","id":`)
	fastMid    = []byte(`,"result":`)
	fastTail   = []byte("}\n")
	fastNull   = []byte("null")
)

// fastEcho answers line if it is a test/echo request; the output is left in
// the buffered writer for the reading loop to flush.
func (s *server) fastEcho(line []byte) bool {
	id, method, params, ok := scanTop(line)
	if !ok || id == nil || !bytes.Equal(method, fastMethod) {
		return false
	}
	if params == nil {
		params = fastNull
	}
	s.wmu.Lock()
	s.writeLocked(fastHead)
	s.writeLocked(id)
	s.writeLocked(fastMid)
	s.writeLocked(params)
	s.writeLocked(fastTail)
	s.wmu.Unlock()
	return true
}

// scanTop walks the members of the JSON object in b and returns the raw
// values of "id", "method" and "params". It validates only structure.
func scanTop(b []byte) (id, method, params []byte, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, nil, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, nil, nil, true
	}
	for i < len(b) {
		if b[i] != '"' {
			return nil, nil, nil, false
		}
		end := skipString(b, i)
		if end < 0 {
			return nil, nil, nil, false
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, nil, nil, false
		}
		start := skipWS(b, i+1)
		end = skipValue(b, start)
		if end <= start {
			return nil, nil, nil, false
		}
		switch string(key) { // no allocation: compiler-optimised comparison
		case "id":
			id = b[start:end]
		case "method":
			method = b[start:end]
		case "params":
			params = b[start:end]
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return nil, nil, nil, false
		}
		if b[i] == '}' {
			return id, method, params, true
		}
		if b[i] != ',' {
			return nil, nil, nil, false
		}
		i = skipWS(b, i+1)
	}
	return nil, nil, nil, false
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"', or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j)
				if j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' &&
		b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	return j
}
