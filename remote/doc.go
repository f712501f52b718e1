// Package remote serves named MCP server pools over NATS and calls them
// from any machine that reaches the same NATS system, with the same call
// surface as a local pool.
//
// A Host (NewHost with Serve(name, pool)) makes each pool a NATS micro
// service: its calls arrive on PREFIX.NAME.call in a queue group shared
// by every host of that name, so several hosts share the load and any of
// them may take any call (modern MCP calls are stateless). A Client
// (NewClient on a connection of ConnectNATS or nats.Connect, or Dial;
// the ctx of Dial, ConnectNATS and NewHost bounds their connecting) is a
// snodo.Session: raw Request, every typed call through the embedded
// snodo.Calls (input_required rounds answered by the caller's own
// handler), and Listen for subscriptions (to the Events channel, or with
// snodo.ListenTo to an actor). It takes the snodo options that apply to
// it, with their meanings for a local client, in WithConnectOptions:
// WithTimeout, WithServerRequestHandler, WithMaxInputRounds,
// WithClientCapabilities, WithTracerProvider, WithMeterProvider,
// WithActorSystem, WithLogger, and WithEra(EraLegacy) with
// WithNotificationHandler for a caller of the legacy era; any other is
// refused. A host given ServeLegacy(name, start) runs such a caller's
// calls on a legacy-era pool it starts with the first of them, and
// relays to the caller the requests and log messages that server sends
// during a call (its handler answers them); that pool serves the
// caller's subscriptions (Listen) too. Each request is
// traced and measured as a local one is (snodo's instrument, through
// internal/connopts: a CLIENT span whose context the host's spans join), and
// each subscription as a local one is (snodo's traceSubscription).
// On a legacy-era server, the host's pool serves Listen as a local one
// does (the server's list changes, and resources/subscribe for the
// resources it watches). A host refuses, with -32600, the methods its
// own connection manages
// (initialize, notifications/…, subscriptions/listen sent as a call,
// resources/subscribe and unsubscribe, logging/setLevel), and drops a
// caller's _meta.progressToken: the progress token is its own.
//
// The payload of a call is its JSON-RPC request, and of its reply the
// JSON-RPC response; the deadline, the heartbeat interval and the trace
// context travel in NATS headers. A caller's timeout or cancelled
// context cancels the call on the host's MCP server; a call on a host
// that dies fails with -32000 (ErrHostGone) within 2 to 3.5 heartbeat
// intervals (1 to 1.75 s by default): a silent host is suspected when
// its silence is unlikely given the gaps between its past beats, and
// declared gone only when the NATS server holds no connection of it. A
// host that is late (a starved machine) but still connected keeps its
// calls for up to 20 intervals of silence (at least 10 s). A name nobody
// serves fails at once with ErrNoHost. Host.Shutdown drains: no new
// calls, the held ones finish, then the pools close.
//
// On one machine, a NATS server can run inside the process (the
// nats-server module's server.NewServer, Start and ReadyForConnections;
// snodo node does so without --nats); docs/distributed.md in the
// repository has the design, the
// subjects and the failure rules, and docs/security.md what a NATS user
// can do to hosts.
package remote
