package snodo

import (
	"context"
	"errors"
)

// serverRequests wraps the user's handler into the one every connection
// uses, whatever the era: ping is answered here (a liveness check must
// not depend on user code), everything else goes to user, and without a
// user handler it is answered with -32601. The same function fulfils the
// inputRequests of modern input_required results (mrtr.go).
func serverRequests(user ServerRequestHandler) ServerRequestHandler {
	return func(ctx context.Context, req *ServerRequest) (any, error) {
		if req.Method == "ping" {
			return struct{}{}, nil
		}
		if user == nil {
			return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + req.Method +
				" (the client has no server-request handler)"}
		}
		return user(ctx, req)
	}
}

// errHandlerPanicked marks the span of a handler run that panicked.
var errHandlerPanicked = errors.New("the server-request handler panicked")

// observed is serverRequests with each run of the user's handler traced
// (a SERVER span) and counted (handlers running): the connection runs
// every server request and every input request of both eras through it.
func (c *Client) observed(user ServerRequestHandler) ServerRequestHandler {
	serve := serverRequests(user)
	if user == nil {
		return serve
	}
	return func(ctx context.Context, req *ServerRequest) (res any, err error) {
		if req.Method == "ping" {
			return serve(ctx, req)
		}
		ctx, span := c.serverRequestSpan(ctx, req)
		c.meters.HandlerStarted(ctx)
		defer func() {
			c.meters.HandlerEnded(ctx)
			if r := recover(); r != nil {
				endServerRequestSpan(span, errHandlerPanicked)
				panic(r)
			}
			endServerRequestSpan(span, err)
		}()
		return serve(ctx, req)
	}
}
