// Package handlers is what a server-request handler is written against:
// the Request an MCP server sends its client (sampling/createMessage,
// roots/list, elicitation/create, ping, or in the modern era one input
// request of an input_required result) and the Func that answers it.
//
// The connection runs each request in a child actor of the connection
// actor, at most its MaxServerRequests at once, with the same panic
// recovery and result encoding in both eras: a legacy server request
// over the bound is answered -32603 at once, a modern input request over
// it waits its turn. The handler's ctx is cancelled when the server
// cancels the request (notifications/cancelled), when the call waiting
// for an input request gives up, or when the connection stops; a
// cancelled request is never answered. The handler never runs inside an
// actor's Receive, so a handler that ignores its ctx never delays the
// connection's stop: it only keeps its own goroutine, and its slot of the
// bound while the connection lives, until it returns.
//
// # Typed requests
//
// Request.Elicitation and Request.Sampling decode the params of
// elicitation/create and sampling/createMessage; ElicitResult,
// CreateMessageResult and ListRootsResult are the answers. An accepted
// elicitation form is checked against the requested schema
// (ElicitParams.Check) where results are encoded, so an answer that does
// not fit is never sent: -32603 instead, whatever the era.
//
// # Answering inside your own actor
//
// ToActor makes a Func that delivers each request to an actor as a
// *RequestMessage; the actor answers with its Reply method. The child
// actor and the bound work as above.
package handlers
