// Package limits holds the default bounds and timeouts that more than one
// of snodo's packages applies, so that each is written once. Users read
// each value in the documentation of the option or field that sets it.
package limits

import "time"

// Timeout is a request's default timeout (connection.Config.Timeout,
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
