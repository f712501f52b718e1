// Package natsname is the rule for the names snodo puts in NATS subjects
// (served names, prefixes, host ids), which package remote applies and
// the snodo CLI checks its flags and served files with.
package natsname

import (
	"fmt"
	"regexp"
)

// Valid matches what a served name (and a prefix, and a host's id) may
// be: one NATS subject token and a micro service's name, so letters,
// digits, '-' and '_' only.
var Valid = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Check returns an error naming what (a "server name", a "prefix") when
// name cannot be served and called: it becomes one NATS subject token
// and a micro service's name, so it takes letters, digits, '-' and '_'
// only (no dot, space or wildcard).
func Check(what, name string) error {
	if !Valid.MatchString(name) {
		return fmt.Errorf("remote: %s %q: use letters, digits, '-' and '_' only (it becomes a NATS subject token)", what, name)
	}
	return nil
}
