// Package safetext makes text a server chose safe to print on a terminal
// or write into a log: Visible for what keeps its lines (the command
// line's output of the server's words, the server's stderr quoted in the
// connection's errors), Line for what must stay on one line, bounded
// (HTTP error bodies and reason phrases, OAuth errors, every other
// server text in an error or a log record) (leaf).
package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Visible is s with every control character other than tab and newline
// written as \x1b and the like, and invalid UTF-8 as U+FFFD. ESC starts
// the sequences that recolour, retitle, move the cursor or set the
// clipboard; C1 codes such as U+009B do the same on some terminals; a
// lone '\r' rewrites the line it is on. Text without any of these is
// returned as it is, without allocating.
func Visible(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) && r != utf8.RuneError {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unsafeRune: what Visible rewrites. utf8.RuneError is what ranging
// over invalid UTF-8 yields (and U+FFFD itself, rewritten as itself).
func unsafeRune(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r <= 0x9f) || r == utf8.RuneError
}

// LineMax is how many bytes of a server's text Line keeps.
const LineMax = 300

// Line is s made safe to quote inside one line of an error or a log
// record: every control character, newline, carriage return and tab
// included, written as \x0a and the like (as are DEL and the C1 codes),
// invalid UTF-8 as U+FFFD, and the text cut after LineMax bytes, on a
// character boundary, with "…" in place of the rest. It is the one
// function through which any text a server chose (an HTTP error body, a
// reason phrase, an OAuth error_description, a WWW-Authenticate value, a
// session id) reaches an error or a log: a server can then neither draw
// on the user's terminal nor start a log line of its own. Text that needs
// none of this is returned as it is, without allocating.
func Line(s string) string { return LineN(s, LineMax) }

// LineN is Line with a bound of max bytes instead of LineMax, for text
// that quotes a server within a longer message of snodo's own (an HTTP
// client's error quoting a malformed header line the server sent).
func LineN(s string, max int) string {
	cut := len(s) > max
	if cut {
		i := max
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	clean := true
	for _, r := range s {
		if unsafeRune(r) || r == '\t' || r == '\n' {
			clean = false
			break
		}
	}
	if clean {
		if cut {
			return s + "…"
		}
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if (unsafeRune(r) && r != utf8.RuneError) || r == '\t' || r == '\n' {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

// Sample is b, bytes a server sent, as they may go into an error or a
// log: Line of its first LineMax+1 bytes (one more than Line keeps, so
// that Line marks the cut), without copying the rest.
func Sample(b []byte) string { return Line(string(b[:min(len(b), LineMax+1)])) }
