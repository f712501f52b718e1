// Package weborigin compares the origins of URLs (RFC 6454): scheme,
// host and port, the default port of the scheme filled in. It decides
// where the HTTP transport and the authorization transport send
// credentials, a session id and the user's headers: to the MCP
// endpoint's origin only (leaf).
package weborigin

import (
	"net"
	"net/url"
	"strings"
)

// Of is u's origin as "scheme://host:port", scheme and host in lower
// case, the port given even when it is the scheme's default (80 for
// http, 443 for https), so that https://example.com and
// https://EXAMPLE.com:443 have the same origin and http://127.0.0.1:8080
// and http://127.0.0.1:9090 do not. A URL without a host has the empty
// origin, which is no other URL's.
func Of(u *url.URL) string {
	if u == nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Same reports whether a and b have the same origin (neither empty).
func Same(a, b *url.URL) bool {
	oa := Of(a)
	return oa != "" && oa == Of(b)
}
