// Package wire finds the top-level members of a JSON-RPC line without
// decoding or allocating: what the fast bench server and the minimal
// client need, and no more. It does not validate the JSON.
package wire

// Members are raw views into one line's top-level members; nil when
// absent. Method is without its quotes (escapes left as written).
type Members struct {
	ID, Method, Result, Error []byte
}

// Top walks the top-level members of the JSON object b, skipping nested
// values without looking into them.
func Top(b []byte) Members {
	var m Members
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return m
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return m
		}
		kEnd := skipString(b, i)
		key := b[i+1 : max(i+1, kEnd-1)]
		i = skipWS(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return m
		}
		i = skipWS(b, i+1)
		vEnd := skipValue(b, i)
		switch string(key) {
		case "id":
			m.ID = b[i:vEnd]
		case "method":
			if vEnd-i >= 2 && b[i] == '"' {
				m.Method = b[i+1 : vEnd-1]
			}
		case "result":
			m.Result = b[i:vEnd]
		case "error":
			m.Error = b[i:vEnd]
		}
		i = skipWS(b, vEnd)
		if i >= len(b) || b[i] != ',' {
			return m
		}
		i++
	}
}

// Int parses a raw id that is a plain non-negative integer.
func Int(raw []byte) (int64, bool) {
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

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' {
		i++
	}
	return i
}
