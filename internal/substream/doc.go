// Package substream runs MCP subscriptions/listen streams on top
// of snodo's connection engine: one long-lived request whose acknowledgement,
// events and end are correlated by the subscription ID (the request's
// JSON-RPC ID, carried in _meta["io.modelcontextprotocol/subscriptionId"]).
//
//	server stdout ──► reader goroutine ──sink (never blocks)──► bounded queue ──► Events() channel
//	                                        │ ack: Open returns              └─(ListenTo)─► pump ──► owner actor
//	                                        │ cancelled: server teardown
//	request goroutine: conn.Request(subscriptions/listen) ── returns ──► end: Err(), close Events, Done
//	owner: Open's ctx ─ done ─┐
//	owner actor ◄─ watcher ───┼──► cancel the request ──► connection sends notifications/cancelled
//	Close ────────────────────┘
//
// Each subscription runs one goroutine (the listen request) plus, when an
// actor receives its events, one pump goroutine that posts them to the
// actor's mailbox. The connection's reader hands notifications to the
// subscription's sink, which appends them to a queue of bounded size (a
// buffered channel; Options.MaxQueue events and Options.MaxQueueBytes of
// their params) without ever blocking; a queue that passes either bound
// ends the subscription with snodo.ErrSubscriptionQueueFull and cancels it on the server.
//
// How a subscription ends decides Err:
//
//	successful response to the listen request   nil (graceful end)
//	server notifications/cancelled              wraps snodo.ErrSubscriptionTeardown
//	Close                                       snodo.ErrSubscriptionClosed
//	Open's ctx done / owner actor terminated    wraps snodo.ErrOwnerExited
//	queue bound passed                          wraps snodo.ErrSubscriptionQueueFull
//	server exit, stdin closed, Conn.Close       the connection's -32000 *jsonrpc.Error
//	error response from the server              that *jsonrpc.Error
package substream
