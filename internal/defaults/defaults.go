// Package defaults holds the default values package snodo documents on
// its options that other parts of this module (the command line, the
// remote client) must agree with: one place for each value.
package defaults

import "time"

const (
	// MaxInputRounds is how many input_required rounds one typed call
	// completes at most (snodo.WithMaxInputRounds).
	MaxInputRounds = 10

	// ProbeTimeout is how long Connect waits for an answer to its
	// server/discover probe before it falls back to the legacy handshake
	// (snodo.WithProbeTimeout).
	ProbeTimeout = 10 * time.Second
)
