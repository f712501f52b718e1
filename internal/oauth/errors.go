package oauth

import (
	"github.com/snodo/snodo/internal/safetext"
)

// describeOAuthError renders an OAuth error code and description as
// " code: description", each through safetext.Line: one line (a newline
// in a description cannot start a line of the server's own in the
// user's terminal or log), escaped and bounded.
func describeOAuthError(code, description string) string {
	s := " " + safetext.Line(code)
	if description != "" {
		s += ": " + safetext.Line(description)
	}
	return s
}

// quoted is a string a server chose (a URL from its metadata or its
// WWW-Authenticate, an issuer, a resource) as an error quotes it:
// within quotes, through safetext.Line.
func quoted(s string) string { return `"` + safetext.Line(s) + `"` }
