package telemetry

import (
	"strings"
	"unicode/utf8"
)

// Bounds on the strings snodo puts into spans and metrics that come from
// a caller or a server (method, tool, prompt and resource names, request
// IDs, error messages, progress messages): a server, or a caller passing
// a server's data along, cannot make a span or a measurement as large as
// it likes. The SDK applies no limit of its own by default.
const (
	// MaxName bounds identifiers: methods, tool and prompt names, URIs,
	// request IDs. MCP asks tool names to be at most 128 characters.
	MaxName = 256
	// MaxText bounds free text: status descriptions (an error's
	// message) and progress messages.
	MaxText = 1024
)

// Bound returns s cut to at most n bytes, at a rune boundary, and made
// valid UTF-8 (an exporter may refuse a batch holding invalid UTF-8). A
// string already within the bound and valid is returned as it is, at no
// allocation.
func Bound(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		if len(s) > n { // each replacement may be longer than the bytes it replaced
			return Bound(s, n)
		}
	}
	return s
}
