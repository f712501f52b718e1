// Package limits holds the default bounds and timeouts that more than one
// of snodo's packages applies, so that each is written once. Users read
// each value in the documentation of the option or field that sets it.
package limits

import (
	"fmt"
	"time"
)

// Timeout is a request's default timeout (engine.Config.Timeout,
// snodo.WithTimeout, the CLI's --timeout) and the default bound on a
// subscription's wait for its acknowledgement.
const Timeout = 60 * time.Second

// Subscriptions (subscription.Options, snodo.MaxQueued, the remote
// client's Listen).
const (
	// MaxQueue bounds the events of a subscription waiting for its reader.
	MaxQueue = 1024
	// MaxQueueBytes bounds the params bytes of those events.
	MaxQueueBytes = 16 << 20
)

// Typed calls and connecting (snodo.WithMaxInputRounds and
// WithProbeTimeout, the remote client, the CLI's flags).
const (
	// MaxInputRounds is how many input_required rounds one typed call
	// completes at most.
	MaxInputRounds = 10
	// ProbeTimeout is how long Connect waits for an answer to its
	// server/discover probe before it falls back to the legacy handshake.
	ProbeTimeout = 10 * time.Second
)

// Hosts (remote.NewHost, the CLI's node flags).
const (
	// MaxHeld bounds the calls and subscriptions one host holds at once
	// (remote.WithMaxHeld, --max-held).
	MaxHeld = 1024
	// DrainTimeout bounds the graceful drain a host runs when the ctx
	// given to NewHost is done (and snodo node's on SIGINT/SIGTERM,
	// --drain).
	DrainTimeout = 30 * time.Second
)

// Connections (engine.Config, snodo.WithMaxLineBytes and
// WithMaxServerRequests, the CLI's flags and its bridge).
const (
	// MaxLineBytes is the largest line accepted from a server by default.
	MaxLineBytes = 16 << 20
	// MaxLineBytesLimit is the largest line cap accepted: 1 GiB. A line
	// is held whole while it arrives and then decoded, so a larger cap
	// would bound no memory worth bounding (one message could take
	// several GiB); values near the int range would also overflow the
	// reader's arithmetic. No MCP message needs more.
	MaxLineBytesLimit = 1 << 30
	// MaxServerRequests bounds the server-request handlers running at
	// once by default.
	MaxServerRequests = 16
)

// CheckMaxLineBytes tells whether n is a line cap a connection accepts:
// from 64 to MaxLineBytesLimit (1 GiB). Its error says what to pass.
func CheckMaxLineBytes(n int) error {
	switch {
	case n < 64:
		return fmt.Errorf("%d bytes is too small: pass at least 64 (the default is %d, 16 MiB)", n, MaxLineBytes)
	case n > MaxLineBytesLimit:
		return fmt.Errorf("%d bytes is too large: pass at most %d (1 GiB; a line is held whole in memory, so a larger cap bounds nothing)", n, MaxLineBytesLimit)
	}
	return nil
}
