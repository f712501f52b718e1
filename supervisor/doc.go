// Package supervisor restarts MCP servers that exit unexpectedly, re-sends
// their subscriptions, and spreads calls over pools of them, on
// protoactor-go's actors.
//
// A supervised connection (Connect) is a supervisor actor that owns a
// server, reached by a snodo.Target (snodo.Command(name, args...) today,
// snodo.HTTP(url) for a remote endpoint):
//
//	c, err := supervisor.Connect(ctx, snodo.Command("my-server", "--stdio"))
//
// It connects with the target's Connect (owned by the
// supervisor's life context and closed in its Stopping, so a connection
// never outlives it), watches the connection
// actor, and when that actor stops for any reason other than Close or
// its owner's exit, it restarts the server after an exponential back-off
// with jitter. More than N restarts within a window (WithIntensity, the
// OTP rule) and it gives up with an error wrapping ErrGaveUp that names the last exit.
//
//	owner (ctx / actor) ──watch──► pool actor ──stops/watches──► supervisor actor ──closes/watches──► snodo connection ──► server process
//	                                   │                         │ ▲ Terminated: Err() says why
//	                                   │                         │ └── restart: time.AfterFunc posts retry; Connect runs in a goroutine
//	                    least in-flight ▼                         ▼
//	  calls ───────────────────────► member Client ──────► current *snodo.Client (waits or fails fast while restarting)
//
// Calls in flight when a server dies fail with -32000 (errors.Is
// snodo.ErrServerExited or the like) and are never retried behind the
// caller's back, since a request need not be idempotent; mark one with
// snodo.Idempotent to have it sent once more to the next server. Calls made
// during a restart wait for the new server, bounded by their Timeout
// request option and ctx, or with FailFast fail at once with a -32000
// wrapping ErrRestarting.
//
// The server keeps no subscription state across a restart (the stdio
// transport's "Unexpected Termination" rule), so a Subscription re-sends
// its subscriptions/listen after each restart and puts a
// ResubscribedMethod marker event on the same Events channel (or to the
// snodo.ListenTo actor) before the new server's events: events sent
// during the gap are lost, and the reader should re-read what it watches.
//
// A Pool runs N supervised connections to the same target, each
// restarting on its own; calls go to the member with the fewest calls in
// flight among those that are up, and wait for the first to come back
// when none is. Grow and Shrink change its size. Close,
// on a Client or a Pool, returns like snodo.Client.Close (stdin closed,
// callers answered) and Done tells when every server has been reaped.
// StartPool starts a pool from an actor without blocking it.
//
// Client and Pool have every typed call of snodo.Client (they embed
// snodo.Calls), and their PIDs take calls as messages (snodo.Call,
// snodo.ToolCall), each answered with one reply.
//
// Restarts are reported as LifecycleEvents (WithEventHandler,
// WithEventsTo) and on the log/slog logger of the connections
// (snodo.WithLogger in WithConnectOptions). See
// docs/supervision.md and docs/actors.md.
package supervisor
