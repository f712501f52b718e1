// Package dispatch runs the handlers (package handlers) of the requests an
// MCP server sends to its client (sampling/createMessage, roots/list,
// elicitation/create, ping) for the connection: one child actor of the
// connection actor per request, at most Config.Max running at once. Both
// eras take this one path: legacy server requests through
// Dispatcher.Dispatch, and the input requests of modern input_required
// results through Dispatcher.Inputs.
//
// # The life of one server request (legacy era)
//
//	server stdout ─line─► reader goroutine ─*Request─► connection actor: Dispatcher.Dispatch
//	   id not a string/number ─► -32600 (null id)      ┐
//	   no handler             ─► -32601                 │ answered at once,
//	   params not {…} or […]  ─► -32602                 │ no handler runs
//	   id still being handled ─► -32600                 │
//	   Max handlers running   ─► -32603                 ┘
//	   otherwise: take a slot, SpawnPrefix "request" ─► child actor
//	child Started ─► goroutine: h(ctx, req), panic → -32603, result → JSON
//	goroutine ─outcome─► child (Root.Send) ─ctx live?─► Respond ─► writer ─► server stdin
//	child stops itself ─Terminated─► connection actor: Dispatcher.Receive frees the slot
//
// # The life of one input request (modern era)
//
//	call goroutine: input_required ─[]*Input─► connection actor: Dispatcher.Inputs
//	   the call's ctx done         ─► skipped                  ┐
//	   MaxWaiting already waiting  ─► Reply(error) at once      ┘ no handler runs
//	   a slot free, nobody waiting ─► take a slot, spawn the child (as above)
//	   otherwise                   ─► wait in line (FIFO) until a child stops
//	child ─outcome─► Input.Reply ─► the call, which sends the retry
//
// The handler's ctx derives from the call's: the call's ctx, its timeout
// (the call stops waiting and withdraws its inputs) and the connection's
// stop cancel it. The panic recovery and result encoding (call, encode)
// are the same for both eras; only the delivery differs — a line to the
// server, or a reply to the waiting call.
//
// Cancellation has one flag, the handler's ctx. The server's
// notifications/cancelled (Dispatcher.Cancel) and the connection's stop
// (Dispatcher.Stop, then the child's own Stopping) cancel it; an outcome
// that arrives after that is dropped, so a cancelled request is never
// answered.
//
// # Why a goroutine inside the actor
//
// protoactor-go stops a parent only once all its children have stopped,
// and a child cannot stop while its Receive runs. The handler therefore
// never runs inside Receive: the child stays responsive, the connection's
// stop takes microseconds whatever the handlers do, and a handler that
// ignores its ctx only keeps its own goroutine (and, while the connection
// lives, its slot of the bound) until it returns.
//
// # The bound
//
// A slot is taken at dispatch and freed when the child stops, which is
// after its handler returned (or when the connection stops). So at most
// Max handlers run at once, even when the server cancels requests whose
// handlers ignore their ctx, and a flood of requests costs one immediate
// -32603 line each beyond the bound. Input requests share the same
// count: over it they wait rather than fail, at most Config.MaxWaiting of
// them, in the order they arrived.
//
// All Dispatcher methods run on the connection actor's goroutine, so its
// tables need no lock.
package dispatch
