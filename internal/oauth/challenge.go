package oauth

import (
	"net/http"
	"strings"
)

// challenge is what a 401 or 403 from the MCP server asked for: the
// parameters of its Bearer or DPoP challenge in WWW-Authenticate
// (RFC 6750 section 3, RFC 9449 section 7.1), and a DPoP-Nonce header.
type challenge struct {
	scheme           string // "bearer" or "dpop", lower case
	resourceMetadata string
	scope            []string
	err              string // the error parameter: "invalid_token", "insufficient_scope", "use_dpop_nonce"
	dpopNonce        string
}

// parseChallenge reads every WWW-Authenticate header of h. Of several
// challenges, the Bearer and DPoP ones count; their parameters are merged
// (the first value of each wins). Malformed input yields what could be
// read: a challenge is advice, and discovery falls back to well-known
// URLs without it.
func parseChallenge(h http.Header) challenge {
	var c challenge
	for _, v := range h.Values("WWW-Authenticate") {
		for _, ch := range splitChallenges(v) {
			if ch.scheme != "bearer" && ch.scheme != "dpop" {
				continue
			}
			if c.scheme == "" {
				c.scheme = ch.scheme
			}
			if c.resourceMetadata == "" {
				c.resourceMetadata = ch.params["resource_metadata"]
			}
			if c.scope == nil {
				c.scope = strings.Fields(ch.params["scope"])
			}
			if c.err == "" {
				c.err = ch.params["error"]
			}
		}
	}
	c.dpopNonce = h.Get("DPoP-Nonce")
	return c
}

type rawChallenge struct {
	scheme string
	params map[string]string
}

// splitChallenges parses one WWW-Authenticate value (RFC 9110 section
// 11.6.1): challenges are a scheme followed by comma-separated
// name=value parameters whose values are tokens or quoted strings; a new
// challenge starts at a token that is not followed by '='.
func splitChallenges(s string) []rawChallenge {
	var out []rawChallenge
	i := 0
	for i < len(s) {
		i = skip(s, i, " \t,")
		tok, j := readToken(s, i)
		if tok == "" {
			// Not a token: skip one byte so that garbage cannot loop.
			i++
			continue
		}
		k := skip(s, j, " \t")
		if k < len(s) && s[k] == '=' && len(out) > 0 {
			// A parameter of the current challenge.
			val, n := readValue(s, skip(s, k+1, " \t"))
			out[len(out)-1].params[strings.ToLower(tok)] = val
			i = n
			continue
		}
		if k < len(s) && s[k] == '=' {
			// A parameter before any scheme: malformed, drop it.
			_, n := readValue(s, skip(s, k+1, " \t"))
			i = n
			continue
		}
		out = append(out, rawChallenge{scheme: strings.ToLower(tok), params: map[string]string{}})
		i = j
	}
	return out
}

func skip(s string, i int, set string) int {
	for i < len(s) && strings.IndexByte(set, s[i]) >= 0 {
		i++
	}
	return i
}

// readToken reads an RFC 9110 token (also token68's characters but '=').
func readToken(s string, i int) (string, int) {
	j := i
	for j < len(s) && isTokenChar(s[j]) {
		j++
	}
	return s[i:j], j
}

func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~/:", b) >= 0
}

// readValue reads a quoted string (with backslash escapes) or a token.
func readValue(s string, i int) (string, int) {
	if i < len(s) && s[i] == '"' {
		var b strings.Builder
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' && j+1 < len(s) {
				j++
			}
			b.WriteByte(s[j])
			j++
		}
		return b.String(), j + 1
	}
	j := i
	for j < len(s) && s[j] != ',' && s[j] != ' ' && s[j] != '\t' {
		j++
	}
	return s[i:j], j
}
