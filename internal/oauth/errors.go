package oauth

import (
	"github.com/snodo/snodo/internal/safetext"
)

// maxDescription bounds how much of a server's error_description an error
// quotes.
const maxDescription = 200

// describeOAuthError renders an OAuth error code and description as
// " code: description", printable and bounded.
func describeOAuthError(code, description string) string {
	s := " " + safetext.Visible(code)
	if description != "" {
		if len(description) > maxDescription {
			description = description[:maxDescription] + "…"
		}
		s += ": " + safetext.Visible(description)
	}
	return s
}
