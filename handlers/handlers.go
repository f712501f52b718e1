package handlers

import (
	"context"
	"encoding/json"
)

// Request is a request the server sent to the client, or one input
// request of a modern input_required result. A handler may keep it after
// returning; nothing else refers to it.
//
// ID is raw JSON. For a server request (legacy era) it is the server's
// JSON-RPC id, a number or a string. For an input request (modern era)
// it is the request's key in the result's inputRequests object, as a JSON
// string ("\"name\"" for the key name): the answer travels back under that
// key in inputResponses.
//
// Method is the request's MCP method, as the specification spells it:
// "elicitation/create" (decode it with Elicitation), "sampling/createMessage"
// (Sampling), "roots/list" (no params; answer with a ListRootsResult) or
// "ping" (answered by the connection, never by a handler).
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage // a JSON object or array, or nil when absent
}

// Func answers one server request. A returned value is marshalled with
// encoding/json as the result; a returned *jsonrpc.Error (snodo.Error) is
// sent as that error, code, message and data; any other error, or a panic,
// is answered with -32603.
//
// Each call runs on a goroutine started by its own child actor of the
// connection, up to the connection's MaxServerRequests at once. ctx is
// cancelled when the server cancels the request (notifications/cancelled),
// when the call waiting for an input request stops waiting (modern era:
// its ctx or its timeout), or when the connection stops; the answer is
// then never sent, so a handler should return as soon as ctx is done. One
// that does not still never delays the connection's stop, but it keeps
// its slot of the bound until it returns.
type Func func(ctx context.Context, req *Request) (any, error)
