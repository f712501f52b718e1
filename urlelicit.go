package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/mcpmethod"
)

// URL elicitation required (legacy era, 2025-11-25): a server that cannot
// serve a request until the user has been through a page of its own (an
// authorization, a payment) answers -32042 with the URLs to open. The
// typed calls return it as a *URLElicitationRequiredError; with
// RetryURLElicitation each URL goes to the server-request handler as a
// URL-mode elicitation/create and the request is sent once more.

// codeURLElicitationRequired is the -32042 a legacy server answers when
// the user must open a URL before the request can be served.
const codeURLElicitationRequired = -32042

// URLElicitation is one page the user must open: URL, with Message saying
// why; ElicitationID names it in a later notifications/elicitation/complete.
// Show the URL's host to the user and ask before opening it: the server
// chose it.
type URLElicitation struct {
	Mode          string `json:"mode"` // "url"
	ElicitationID string `json:"elicitationId"`
	URL           string `json:"url"`
	Message       string `json:"message"`
}

// URLElicitationRequiredError is a server's -32042: the request can be
// served once the user has opened each URL of Elicitations. errors.As
// finds it in the errors of the typed calls (CallTool, ReadResource,
// GetPrompt, …); it wraps the server's *Error, which errors.As finds too.
// RetryURLElicitation handles it for a call.
type URLElicitationRequiredError struct {
	Elicitations []URLElicitation
	Err          *Error // the server's error, as sent
}

// Error is the server's message followed by the URLs to open.
func (e *URLElicitationRequiredError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	for _, el := range e.Elicitations {
		fmt.Fprintf(&b, "; open %s", el.URL)
		if el.Message != "" {
			fmt.Fprintf(&b, " (%s)", el.Message)
		}
	}
	return b.String()
}

// Unwrap returns the server's *Error.
func (e *URLElicitationRequiredError) Unwrap() error { return e.Err }

// urlElicitationRequired returns err as a *URLElicitationRequiredError
// when it is a server's -32042 that names at least one URL; else nil.
func urlElicitationRequired(err error) *URLElicitationRequiredError {
	var e *Error
	if !errors.As(err, &e) || e.Local() || e.Code != codeURLElicitationRequired {
		return nil
	}
	var data struct {
		Elicitations []URLElicitation `json:"elicitations"`
	}
	if json.Unmarshal(e.Data, &data) != nil || len(data.Elicitations) == 0 {
		return nil
	}
	return &URLElicitationRequiredError{Elicitations: data.Elicitations, Err: e}
}

// RetryURLElicitation handles a server's -32042 for a typed call (legacy
// era): each URL it names goes to the server-request handler as a
// URL-mode elicitation/create (on the one handler path; the handler shows
// it to the user and answers once they are through), and when every one
// is accepted the request is sent once more. Without it, or when the
// handler does not accept, the call fails with the
// *URLElicitationRequiredError. Declare URL mode
// (ElicitationCapability.URL) so servers use it.
func RetryURLElicitation() RequestOption {
	return calls.Flag[Progress, TaskStatus](calls.KeyRetryURLElicitation)
}

// elicitURLs hands each elicitation of ue to the handler; nil when the
// user accepted every one.
func (c Calls) elicitURLs(ctx context.Context, method string, ue *URLElicitationRequiredError, opts []RequestOption) error {
	reqs := make(map[string]inputRequest, len(ue.Elicitations))
	for i, el := range ue.Elicitations {
		el.Mode = "url"
		params, _ := json.Marshal(el) // strings only: cannot fail
		reqs[fmt.Sprintf("url-%03d", i)] = inputRequest{Method: mcpmethod.Elicitation, Params: params}
	}
	results, err := fulfil(ctx, c.inputHandling(), method, reqs, opts)
	if err != nil {
		return fmt.Errorf("%w (handling it: %w)", ue, err)
	}
	for _, raw := range results {
		var r struct {
			Action string `json:"action"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Action != "accept" {
			return ue
		}
	}
	return nil
}
