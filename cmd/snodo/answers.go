package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"

	"github.com/snodo/snodo"
)

// codeUserRejected is MCP's error code for a request the user declined.
const codeUserRejected = -1

// answers answers the server's requests to the client (legacy era) and
// the input requests of input_required results (modern era):
//
//	roots/list              the --root directories; -32601 without any (not declared)
//	elicitation/create      a prompt on the terminal; declined when stdin is not one
//	sampling/createMessage  --sampling-reply TEXT, or declined
type answers struct {
	roots         []string // absolute paths
	samplingReply string
	io            stdio
	verbose       bool

	promptOnce sync.Once
	prompt     *prompter
}

// capabilities declares what serve answers: elicitation always (declined
// when not interactive), roots and sampling when the flags provide them.
func (a *answers) capabilities() snodo.ClientCapabilities {
	caps := snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true, URL: true}}
	if len(a.roots) > 0 {
		caps.Roots = &snodo.ListChangedCapability{}
	}
	if a.samplingReply != "" {
		caps.Sampling = &snodo.SamplingCapability{}
	}
	return caps
}

// serve is the ServerRequestHandler.
func (a *answers) serve(ctx context.Context, req *snodo.ServerRequest) (any, error) {
	if a.verbose {
		fmt.Fprintf(a.io.err, "snodo: the server asks %s %s\n", req.Method, oneLine(string(req.Params)))
	}
	switch req.Method {
	case "roots/list":
		if len(a.roots) == 0 {
			// Not declared: answer as for any capability snodo lacks.
			fmt.Fprintln(a.io.err, "snodo: the server asked for roots/list, which snodo did not declare; pass --root DIR to share a directory")
			return nil, &snodo.Error{Code: snodo.CodeMethodNotFound,
				Message: "method not found: roots/list (the client declared no roots capability; the snodo command line shares directories given with --root DIR)"}
		}
		return a.listRoots(), nil
	case "elicitation/create":
		a.promptOnce.Do(func() { a.prompt = newPrompter(a.io) })
		return a.prompt.elicit(ctx, req.Params)
	case "sampling/createMessage":
		return a.sample()
	}
	return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: "snodo does not answer " + req.Method}
}

// root is one entry of a roots/list result.
type root struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

func (a *answers) listRoots() any {
	roots := make([]root, 0, len(a.roots))
	for _, dir := range a.roots {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}
		roots = append(roots, root{URI: u.String(), Name: filepath.Base(dir)})
	}
	return map[string]any{"roots": roots}
}

// sample answers sampling/createMessage with the fixed reply, or declines:
// snodo has no language model of its own.
func (a *answers) sample() (any, error) {
	if a.samplingReply == "" {
		fmt.Fprintln(a.io.err, "snodo: declined the server's sampling/createMessage request; pass --sampling-reply TEXT to answer it")
		return nil, &snodo.Error{Code: codeUserRejected,
			Message: "sampling declined: the snodo command line has no model (run it with --sampling-reply TEXT to answer with fixed text)"}
	}
	return map[string]any{
		"role":       "assistant",
		"content":    map[string]string{"type": "text", "text": a.samplingReply},
		"model":      "snodo-fixed-reply",
		"stopReason": "endTurn",
	}, nil
}

// declined is the elicitation result for a request nobody answered.
var declined = json.RawMessage(`{"action":"decline"}`)
