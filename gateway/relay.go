package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Messages the backend starts: server requests (sampling, elicitation,
// roots), logs and other notifications. They reach the gateway through
// the handlers ConnectOptions installs on the backend's connections.
//
// Which call a server request belongs to: a stdio server's request
// carries nothing that names the request it serves, and snodo's
// server-request handler is not told either. The gateway gives it to the
// legacy client whose call started last among the calls in flight (on a
// pinned member that is the session's own call whenever one client at a
// time is calling), on that call's own stream, and relays the client's
// answer, error included. With no legacy call in flight it goes to the
// GET stream of the one legacy session, if there is exactly one; else it
// is refused (-32603, saying why): the gateway never answers one itself.
// Modern servers put their requests inside input_required results, which
// go to the very call that got them (rounds).

// ConnectOptions are the options the session's connections need so that
// server requests, logs and notifications reach the gateway's clients:
// give them to snodo.Connect, or to a supervisor's or pool's
// supervisor.WithConnectOptions, before Attach. They declare the client
// capabilities (sampling, elicitation, roots) the gateway's clients may
// have; a client that lacks one answers the server's request with its
// own error. A remote client (remote.WithConnectOptions) takes them too:
// the log messages of a legacy-era remote client's calls reach the
// notification handler; a modern-era one's stay with its hosts.
func (h *Handler) ConnectOptions() []snodo.Option {
	return []snodo.Option{
		snodo.WithNotificationHandler(h.notification),
		snodo.WithServerRequestHandler(h.serverRequest),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{
			Roots:       &snodo.ListChangedCapability{ListChanged: true},
			Sampling:    &snodo.SamplingCapability{Context: true, Tools: true},
			Elicitation: &snodo.ElicitationCapability{Form: true, URL: true},
		}),
	}
}

// serverRequest relays a backend's server request to the client whose
// call it belongs to and returns that client's answer.
func (h *Handler) serverRequest(ctx context.Context, req *snodo.ServerRequest) (any, error) {
	c := h.calls.latest(func(c *call) bool { return c.sess != nil })
	if c == nil {
		// Outside any call (roots/list after initialized, say): the one
		// legacy session there is, on its GET stream; with several there
		// is no telling whose it is.
		if all := h.sessions.all(); len(all) == 1 {
			return all[0].ask(ctx, nil, req.Method, req.Params)
		}
		return nil, &snodo.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("gateway: no client call in flight to relay %s to", req.Method)}
	}
	raw, err := c.sess.ask(ctx, c.st, req.Method, req.Params)
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// notification routes a notification of the backend: a log to the call
// that asked for logs (latest first), or to the legacy sessions that set
// a level; list changes empty the cache; anything else goes to every
// legacy session's stream.
func (h *Handler) notification(ctx context.Context, n *snodo.Notification) {
	params := n.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	line := jsonrpc.AppendNotification(nil, n.Method, params)
	switch n.Method {
	case "notifications/message":
		if c := h.calls.latest(func(c *call) bool { return c.logs }); c != nil && c.st.event(line) {
			return
		}
		for _, s := range h.sessions.all() {
			s.mu.Lock()
			level := s.level
			s.mu.Unlock()
			if level != "" {
				s.deliver(line)
			}
		}
		return
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		// Claimed by followLists' subscription in both eras; one that
		// reaches here empties every cache and goes to every session.
		ev := snodo.Event{Method: n.Method, Params: n.Params}
		if cache := h.listCache(); cache != nil {
			cache.invalidateFor(n.Method)
		}
		if sd := h.legacySide(); sd != nil && sd.cache != nil {
			sd.cache.invalidateFor(n.Method)
		}
		h.listChanged(ev)
		return
	case "notifications/resources/updated":
		return // the sessions' own subscriptions deliver these
	}
	for _, s := range h.sessions.all() {
		s.deliver(line)
	}
}

// followLists keeps a subscription to the backend's list changes for the
// handler's life: each empties the cache and goes to every legacy
// session; a renewal after a restart goes out as list_changed for every
// list, since the lists may have changed meanwhile.
func (h *Handler) followLists(sd *side, main bool) {
	f := snodo.Filter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}
	follow(h.ctx, sd.s, f, func(ev snodo.Event) {
		if sd.cache != nil {
			sd.cache.invalidateFor(ev.Method)
		}
		if !main || h.legacySide() == sd {
			h.listChanged(ev)
		}
	}, func() { close(sd.following) })
}

// listChanged tells every legacy session of a list change.
func (h *Handler) listChanged(ev snodo.Event) {
	all := snodo.Filter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}
	lines := eventLines(ev, all, nil)
	for _, s := range h.sessions.all() {
		for _, l := range lines {
			s.deliver(l)
		}
	}
}

// inputRequired is the part of a modern input_required result a legacy
// client's call needs to be completed.
type inputRequired struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState json.RawMessage `json:"requestState"`
}

// maxRounds bounds the input rounds of one legacy call.
const maxRounds = 16

// rounds forwards a legacy client's request and, when a modern backend
// answers input_required, asks the client each input request as the
// server request it was in the legacy era (on the call's stream), then
// sends the request again with the answers, until the result is complete.
func (h *Handler) rounds(ctx context.Context, s *session, c *call, method string, params []byte) (json.RawMessage, error) {
	for range maxRounds {
		raw, err := h.forward(ctx, s.backend, c, method, params)
		if err != nil || s.era != snodo.EraModern {
			return raw, err
		}
		rt, _ := jsonrpc.Member(raw, "resultType")
		if jsonrpc.Unquote(rt) != "input_required" {
			return raw, nil
		}
		var ir inputRequired
		if err := json.Unmarshal(raw, &ir); err != nil {
			return nil, fmt.Errorf("malformed input_required result: %w", err)
		}
		responses := map[string]json.RawMessage{}
		for key, req := range ir.InputRequests {
			res, err := s.ask(ctx, c.st, req.Method, req.Params)
			if err != nil {
				return nil, err
			}
			responses[key] = res
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
			obj = map[string]json.RawMessage{}
		}
		obj["inputResponses"], _ = json.Marshal(responses)
		if len(ir.RequestState) > 0 {
			obj["requestState"] = ir.RequestState
		} else {
			delete(obj, "requestState")
		}
		params, _ = json.Marshal(obj)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("gateway: %s still asked for input after %d rounds", method, maxRounds)}
}
