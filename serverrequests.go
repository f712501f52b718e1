package snodo

import (
	"context"
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
