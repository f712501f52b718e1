package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// modernRequest serves one request of a 2026-07-28 client: its headers
// and _meta checked as the transport requires, then forwarded as it came
// (its _meta is the client's: protocol version, capabilities, log level
// reach the backend untouched), and its answer sent back, an
// input_required result included.
func (h *Handler) modernRequest(w http.ResponseWriter, r *http.Request, s snodo.Session, env jsonrpc.Envelope) {
	method := env.MethodName()
	id := env.ID
	if msg := checkMeta(env.Params); msg != "" {
		writeJSONError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidParams, msg, nil)
		return
	}
	if msg := h.checkHeaders(r, env, method); msg != "" {
		writeJSONError(w, http.StatusBadRequest, id, codeHeaderMismatch, msg, nil)
		return
	}
	if removedInModern(method) {
		writeJSONError(w, http.StatusNotFound, id, jsonrpc.CodeMethodNotFound, "Method not found: "+method+" is not a 2026-07-28 method", nil)
		return
	}
	st := newStream(w, nil)
	defer st.end()
	if method == "subscriptions/listen" {
		if h.listens.Add(1) > int64(h.cfg.maxSessions) {
			h.listens.Add(-1)
			w.Header().Set("Retry-After", "5")
			writeJSONError(w, http.StatusServiceUnavailable, id, jsonrpc.CodeInternalError, "gateway: too many open subscriptions; retry later", nil)
			return
		}
		defer h.listens.Add(-1)
	}
	h.serveModern(r.Context(), st, s, env)
}

// serveModern serves a modern request whose _meta (and, over HTTP, its
// headers) were checked, whatever the transport: its messages and answer
// go out on st.
func (h *Handler) serveModern(ctx context.Context, st outlet, s snodo.Session, env jsonrpc.Envelope) {
	method, id := env.MethodName(), env.ID
	if method == "subscriptions/listen" {
		h.modernListen(ctx, st, s, env)
		return
	}
	c := &call{st: st, modern: true, logs: hasLogLevel(env.Params)}
	var raw json.RawMessage
	var err error
	if cache := h.listCache(); cache != nil && isListMethod(method) {
		raw, err = cache.list(ctx, method, env.Params, func(ctx context.Context) (json.RawMessage, error) {
			return h.forward(ctx, s, c, method, env.Params)
		})
	} else {
		raw, err = h.forward(ctx, s, c, method, env.Params)
	}
	if err != nil {
		e := errorOf(err)
		st.final(statusOf(e.Code, true), jsonrpc.AppendError(nil, id, e))
		return
	}
	st.final(http.StatusOK, jsonrpc.AppendResult(nil, id, raw))
}

// removedInModern reports whether method was removed in 2026-07-28: a
// modern request for it is answered -32601 (404) by the gateway, as any
// modern server would, whatever era the backend speaks (a remote host
// refuses some of them with an error of its own).
func removedInModern(method string) bool {
	switch method {
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// checkMeta is why a modern request's _meta is refused (-32602), "" when
// it carries the required members.
func checkMeta(params []byte) string {
	if len(params) == 0 {
		return "Invalid params: the request has no params._meta; a 2026-07-28 request carries " + metaProtocolVersion + " and " + metaClientCapabilities
	}
	meta, err := jsonrpc.Member(params, "_meta")
	if err != nil || meta == nil || meta[0] != '{' {
		return "Invalid params: params._meta is missing; a 2026-07-28 request carries " + metaProtocolVersion + " and " + metaClientCapabilities
	}
	for _, k := range []string{metaProtocolVersion, metaClientCapabilities} {
		if v, _ := jsonrpc.Member(meta, k); v == nil {
			return "Invalid params: params._meta has no " + k
		}
	}
	return ""
}

func hasLogLevel(params []byte) bool {
	meta, _ := jsonrpc.Member(params, "_meta")
	v, _ := jsonrpc.Member(meta, metaLogLevel)
	return v != nil
}

// checkHeaders compares the request headers the transport mirrors from
// the body (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*) with
// the body; the message says what does not match, "" when all do.
func (h *Handler) checkHeaders(r *http.Request, env jsonrpc.Envelope, method string) string {
	meta, _ := jsonrpc.Member(env.Params, "_meta")
	pv := jsonrpc.Unquote(mustMember(meta, metaProtocolVersion))
	hv := strings.TrimSpace(r.Header.Get(hdrProtocolVersion))
	switch {
	case hv == "":
		return "Header mismatch: the MCP-Protocol-Version header is missing"
	case hv != pv:
		return "Header mismatch: MCP-Protocol-Version header " + quoteSafe(hv) + " does not match _meta's " + quoteSafe(pv)
	}
	hm, ok := r.Header[http.CanonicalHeaderKey(hdrMethod)]
	if !ok || len(hm) == 0 {
		return "Header mismatch: the Mcp-Method header is missing"
	}
	if strings.TrimSpace(hm[0]) != method {
		return "Header mismatch: Mcp-Method header " + quoteSafe(hm[0]) + " does not match the body's method " + quoteSafe(method)
	}
	var nameKey string
	switch method {
	case "tools/call", "prompts/get":
		nameKey = "name"
	case "resources/read":
		nameKey = "uri"
	}
	if nameKey != "" {
		body := jsonrpc.Unquote(mustMember(env.Params, nameKey))
		hn, present := r.Header[http.CanonicalHeaderKey(hdrName)]
		if !present || len(hn) == 0 {
			return "Header mismatch: the Mcp-Name header is missing"
		}
		v, ok := decodeHeaderValue(strings.TrimSpace(hn[0]))
		if !ok {
			return "Header mismatch: the Mcp-Name header is not a valid value"
		}
		if v != body {
			return "Header mismatch: Mcp-Name header " + quoteSafe(v) + " does not match body value " + quoteSafe(body)
		}
	}
	if method == "tools/call" {
		return h.checkParamHeaders(r, env.Params)
	}
	return ""
}

func mustMember(obj []byte, key string) []byte {
	if len(obj) == 0 {
		return nil
	}
	v, _ := jsonrpc.Member(obj, key)
	return v
}

// decodeHeaderValue undoes the =?base64?…?= sentinel encoding; ok is
// false for a malformed encoded value.
func decodeHeaderValue(v string) (string, bool) {
	if !strings.HasPrefix(v, "=?base64?") || !strings.HasSuffix(v, "?=") || len(v) < len("=?base64??=") {
		return v, true
	}
	b, err := base64Std(v[len("=?base64?") : len(v)-2])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// modernListen serves subscriptions/listen: a subscription on the
// backend, whose acknowledgement and events go out on this request's
// stream under the client's own request id, until the client closes it.
// A backend restart (the supervisor's marker) goes out as list_changed
// notifications for the lists the client asked to follow.
func (h *Handler) modernListen(ctx context.Context, st outlet, s snodo.Session, env jsonrpc.Envelope) {
	var p struct {
		Notifications snodo.Filter `json:"notifications"`
	}
	if err := json.Unmarshal(env.Params, &p); err != nil {
		st.final(http.StatusBadRequest, jsonrpc.AppendError(nil, env.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + err.Error()}))
		return
	}
	sub, err := s.Listen(ctx, p.Notifications)
	if err != nil {
		e := errorOf(err)
		st.final(statusOf(e.Code, true), jsonrpc.AppendError(nil, env.ID, e))
		return
	}
	defer sub.Close()
	idMeta := map[string]json.RawMessage{metaSubscriptionID: append(json.RawMessage(nil), env.ID...)}
	ack, _ := json.Marshal(map[string]any{"_meta": idMeta, "notifications": sub.Acknowledged()})
	if !st.event(jsonrpc.AppendNotification(nil, "notifications/subscriptions/acknowledged", ack)) {
		return
	}
	h.pump(ctx, st, sub, p.Notifications, idMeta)
}

// pump copies a subscription's events to a stream (with the subscription
// id members in _meta, for a modern client), sending keep-alive comments
// while it is quiet, until ctx ends, the stream breaks or the
// subscription ends.
func (h *Handler) pump(ctx context.Context, st outlet, sub *snodo.Subscription, f snodo.Filter, idMeta map[string]json.RawMessage) {
	tick := newTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.ctx.Done():
			return
		case <-tick.C:
			if !st.comment() {
				return
			}
		case ev, ok := <-sub.Events():
			if !ok {
				return
			}
			for _, line := range eventLines(ev, f, idMeta) {
				if !st.event(line) {
					return
				}
			}
		}
	}
}

// eventLines are the notifications one subscription event becomes: the
// event with its _meta set to idMeta's members, or for a resubscription
// marker one list_changed per list f follows.
func eventLines(ev snodo.Event, f snodo.Filter, idMeta map[string]json.RawMessage) [][]byte {
	if isResubscribed(ev.Method) {
		var out [][]byte
		for _, m := range listChangedOf(f) {
			params := []byte("{}")
			if idMeta != nil {
				params = addMeta(params, idMeta)
			}
			out = append(out, jsonrpc.AppendNotification(nil, m, params))
		}
		return out
	}
	params := []byte(ev.Params)
	if len(bytes.TrimSpace(params)) == 0 {
		params = []byte("{}")
	}
	params = setMeta(params, idMeta)
	return [][]byte{jsonrpc.AppendNotification(nil, ev.Method, params)}
}

// setMeta replaces params._meta's members named in members (nil members:
// removes the subscription id the backend put there).
func setMeta(params []byte, members map[string]json.RawMessage) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(obj["_meta"], &meta)
	delete(meta, metaSubscriptionID)
	for k, v := range members {
		meta[k] = v
	}
	if len(meta) == 0 {
		delete(obj, "_meta")
	} else {
		obj["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}

func listChangedOf(f snodo.Filter) []string {
	var out []string
	if f.ToolsListChanged {
		out = append(out, "notifications/tools/list_changed")
	}
	if f.PromptsListChanged {
		out = append(out, "notifications/prompts/list_changed")
	}
	if f.ResourcesListChanged {
		out = append(out, "notifications/resources/list_changed")
	}
	return out
}
