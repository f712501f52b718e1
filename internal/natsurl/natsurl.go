// Package natsurl keeps credentials written into NATS URLs out of what
// snodo prints: errors, logs and status lines.
package natsurl

import "strings"

// Redact returns urls (one NATS URL, or several separated by commas, as
// nats.Connect takes them) with the user information of each replaced
// by "***": nats://alice:secret@host:4222 and nats://token@host:4222
// both become nats://***@host:4222.
func Redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		rest, scheme := u, ""
		if j := strings.Index(u, "://"); j >= 0 {
			scheme, rest = u[:j+3], u[j+3:]
		}
		authority := rest
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			authority = rest[:j]
		}
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			parts[i] = scheme + "***" + rest[at:]
		}
	}
	return strings.Join(parts, ",")
}
