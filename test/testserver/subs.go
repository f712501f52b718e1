package testserver

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// subscriptionFilter is the notifications member of subscriptions/listen.
type subscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// subscription is one open subscriptions/listen stream.
type subscription struct {
	id     json.RawMessage
	filter subscriptionFilter // the honoured subset
}

// wants reports whether the subscription's filter asks for method.
func (sub *subscription) wants(method string, params json.RawMessage) bool {
	switch strings.TrimPrefix(method, "notifications/") {
	case "tools/list_changed":
		return sub.filter.ToolsListChanged
	case "prompts/list_changed":
		return sub.filter.PromptsListChanged
	case "resources/list_changed":
		return sub.filter.ResourcesListChanged
	case "resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p)
		return slices.Contains(sub.filter.ResourceSubscriptions, p.URI)
	}
	return false
}

// subTable holds the open subscriptions in opening order. Its mutex is held
// while writing anything that belongs to a subscription, so a subscription's
// messages are ordered (acknowledgement first, end last).
type subTable struct {
	s    *server
	mu   sync.Mutex
	open []*subscription
}

func (t *subTable) init(s *server) { t.s = s }

// find returns the open subscription with key; the caller holds mu.
func (t *subTable) find(key string) (int, *subscription) {
	for i, sub := range t.open {
		if idKey(sub.id) == key {
			return i, sub
		}
	}
	return -1, nil
}

// cancel drops the subscription with key, if open, without answering it.
func (t *subTable) cancel(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, _ := t.find(key); i >= 0 {
		t.open = slices.Delete(t.open, i, i+1)
	}
}

func (s *server) listen(req *request) (any, *rpcError) {
	if !s.allowsModern() {
		return nil, errMethodNotFound(req.method)
	}
	var p struct {
		Notifications subscriptionFilter `json:"notifications"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if s.cfg.silentListen {
		return noAnswer, nil
	}
	honoured := subscriptionFilter{
		ToolsListChanged:      p.Notifications.ToolsListChanged,
		ResourcesListChanged:  p.Notifications.ResourcesListChanged,
		ResourceSubscriptions: p.Notifications.ResourceSubscriptions,
	}
	sub := &subscription{id: req.id, filter: honoured}
	t := &s.subs
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, _ := t.find(idKey(req.id)); i >= 0 {
		t.open = slices.Delete(t.open, i, i+1)
	}
	s.notify("notifications/subscriptions/acknowledged", obj{
		"_meta":         obj{metaSubscriptionID: req.id},
		"notifications": honoured,
	})
	t.open = append(t.open, sub)
	return noAnswer, nil
}

// withSubscriptionID returns params with _meta[subscriptionId] set to id.
func withSubscriptionID(params, id json.RawMessage) obj {
	out := obj{}
	_ = json.Unmarshal(params, &out)
	meta, _ := out["_meta"].(map[string]any)
	if meta == nil {
		meta = obj{}
	}
	meta[metaSubscriptionID] = id
	out["_meta"] = meta
	return out
}

func (s *server) emit(req *request) (any, *rpcError) {
	p := struct {
		Method            string          `json:"method"`
		Params            json.RawMessage `json:"params"`
		Count             int             `json:"count"`
		Subscription      json.RawMessage `json:"subscription"`
		Force             bool            `json:"force"`
		RawSubscriptionID json.RawMessage `json:"rawSubscriptionId"`
	}{Count: 1}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if p.Method == "" {
		return nil, errInvalidParams("method is required")
	}
	t := &s.subs
	t.mu.Lock()
	defer t.mu.Unlock()
	var targets []json.RawMessage
	switch {
	case p.RawSubscriptionID != nil:
		targets = append(targets, p.RawSubscriptionID)
	case p.Subscription != nil:
		_, sub := t.find(idKey(p.Subscription))
		if sub == nil {
			return nil, errInvalidParams("no open subscription " + string(p.Subscription))
		}
		if p.Force || sub.wants(p.Method, p.Params) {
			targets = append(targets, sub.id)
		}
	default:
		for _, sub := range t.open {
			if p.Force || sub.wants(p.Method, p.Params) {
				targets = append(targets, sub.id)
			}
		}
	}
	sent := 0
	for _, id := range targets {
		for range p.Count {
			s.notify(p.Method, withSubscriptionID(p.Params, id))
			sent++
		}
	}
	return obj{"sent": sent}, nil
}

func (s *server) endSubscription(req *request) (any, *rpcError) {
	p := struct {
		Subscription json.RawMessage `json:"subscription"`
		Mode         string          `json:"mode"`
	}{Mode: "graceful"}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	t := &s.subs
	t.mu.Lock()
	defer t.mu.Unlock()
	i, sub := t.find(idKey(p.Subscription))
	if sub == nil {
		return nil, errInvalidParams("no open subscription " + string(p.Subscription))
	}
	switch p.Mode {
	case "graceful":
		s.writeLine(responseLine(sub.id, encode(obj{
			"resultType": "complete",
			"_meta":      obj{metaSubscriptionID: sub.id},
		})))
	case "teardown":
		s.notify("notifications/cancelled", obj{"requestId": sub.id, "reason": "server shutting down"})
	default:
		return nil, errInvalidParams("mode must be graceful or teardown")
	}
	t.open = slices.Delete(t.open, i, i+1)
	return obj{}, nil
}

func (s *server) subscriptionsMethod(*request) (any, *rpcError) {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	ids := make([]json.RawMessage, 0, len(s.subs.open))
	for _, sub := range s.subs.open {
		ids = append(ids, sub.id)
	}
	return obj{"open": ids}, nil
}
