package dispatch

import (
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// checkElicitAnswer checks a handler's answer to elicitation/create
// against the requested schema, as it will be sent: result is the
// handler's encoded result. A form accepted with content that does not
// fit is a -32603 *jsonrpc.Error that says why. Other methods, URL mode,
// declined or cancelled forms and malformed params pass.
func checkElicitAnswer(req *handlers.Request, result json.RawMessage) *jsonrpc.Error {
	if req.Method != handlers.MethodElicitation {
		return nil
	}
	params, err := req.Elicitation()
	if err != nil {
		return nil // the server's request was malformed; the handler chose to answer it anyway
	}
	var answer struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(result, &answer); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "internal error: the client's answer to elicitation/create is not an ElicitResult: " + err.Error()}
	}
	switch answer.Action {
	case handlers.ElicitAccept:
	case handlers.ElicitDecline, handlers.ElicitCancel:
		return nil
	default:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("internal error: the client's answer to elicitation/create has action %q (want accept, decline or cancel)", answer.Action)}
	}
	if err := params.Check(answer.Content); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "internal error: the client's answer to elicitation/create does not match the requested schema: " + err.Error()}
	}
	return nil
}
