// Package safetext makes text a server chose safe to print on a terminal
// or write into a log: the command line's output of the server's words
// and the connection's errors quoting the server's stderr (leaf).
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
