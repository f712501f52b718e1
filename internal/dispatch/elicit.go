package dispatch

import (
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
)

// CheckElicitAnswer checks a handler's answer to elicitation/create
// against the requested schema, as it will be sent: result is the
// handler's encoded result. Every path a handler's answer takes uses it:
// this package's children and Serve. A form accepted with content that does not
// fit is refused: wire is the -32603 for the server, cause what a local
// caller is told. Other methods, URL mode,
// declined or cancelled forms and malformed params pass.
func CheckElicitAnswer(req *handlers.Request, result json.RawMessage) (wire *jsonrpc.Error, cause error) {
	if req.Method != mcpmethod.Elicitation {
		return nil, nil
	}
	params, err := req.Elicitation()
	if err != nil {
		return nil, nil // the server's request was malformed; the handler chose to answer it anyway
	}
	var answer struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(result, &answer); err != nil {
		return refuse("is not an ElicitResult: " + err.Error())
	}
	switch answer.Action {
	case "accept":
	case "decline", "cancel":
		return nil, nil
	default:
		return refuse(fmt.Sprintf("has action %q (want accept, decline or cancel)", answer.Action))
	}
	if err := params.Check(answer.Content); err != nil {
		return refuse("does not match the requested schema: " + err.Error())
	}
	return nil, nil
}

// refuse: -32603 for the server; for a local caller (modern era), an
// error that says snodo refused the handler's answer.
func refuse(why string) (*jsonrpc.Error, error) {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the client's answer to elicitation/create " + why},
		fmt.Errorf("snodo refused to send the handler's answer to elicitation/create: it %s", why)
}
