package demoserver

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// subscriptions holds the open subscriptions/listen streams and the time
// plugin, whose loading changes the tool list. Its mutex is held while a
// subscription's messages are written, so its acknowledgement always goes
// out before its first event.
type subscriptions struct {
	s *server

	mu      sync.Mutex
	open    []*openSub
	plugin  *time.Timer // started by the first subscription to tool changes
	loaded  bool
	stopped bool
}

// openSub is one stream: its ID (the listen request's ID), whether it
// asked for tools/list_changed, and where its messages go.
type openSub struct {
	id    json.RawMessage
	tools bool
	send  func(any)
}

// filter is the "notifications" member of subscriptions/listen.
type filter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// listen opens a stream. The server acknowledges the part of the filter it
// honours (only tool changes: it has no prompts or resources) and leaves
// the request unanswered: it stays open until the client cancels it.
func (s *server) listen(ctx context.Context, m *message, _ *requestMeta) (any, *rpcError) {
	var p struct {
		Notifications filter `json:"notifications"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "invalid subscriptions/listen params: " + err.Error()}
	}
	honoured := filter{ToolsListChanged: p.Notifications.ToolsListChanged}

	t := &s.subs
	t.mu.Lock()
	defer t.mu.Unlock()
	s.notify(ctx, "notifications/subscriptions/acknowledged", obj{
		"_meta":         obj{metaSubscriptionID: m.ID},
		"notifications": honoured,
	})
	sub := &openSub{id: m.ID, tools: honoured.ToolsListChanged, send: s.sender(ctx)}
	t.open = append(t.open, sub)
	if _, overHTTP := ctx.Value(streamKey{}).(func(any)); overHTTP {
		// Over HTTP the stream is the POST's response: it ends when the
		// client closes it, and with it the subscription.
		context.AfterFunc(ctx, func() { t.remove(sub) })
	}
	if honoured.ToolsListChanged && t.plugin == nil && !t.stopped {
		// Someone is watching: "load" the plugin, which adds a tool.
		t.plugin = time.AfterFunc(s.opts.PluginDelay, t.loadPlugin)
	}
	return nil, noAnswer
}

// loadPlugin adds the time tool and tells every stream watching tools.
func (t *subscriptions) loadPlugin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.loaded = true
	for _, sub := range t.open {
		if sub.tools {
			sub.send(notification{JSONRPC: "2.0", Method: "notifications/tools/list_changed",
				Params: obj{"_meta": obj{metaSubscriptionID: sub.id}}})
		}
	}
}

// pluginLoaded reports whether the time tool is offered.
func (t *subscriptions) pluginLoaded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loaded
}

// cancel closes the stream with that ID, if one is open.
func (t *subscriptions) cancel(id json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open = slices.DeleteFunc(t.open, func(sub *openSub) bool { return idKey(sub.id) == idKey(id) })
}

// remove closes one stream.
func (t *subscriptions) remove(sub *openSub) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open = slices.DeleteFunc(t.open, func(o *openSub) bool { return o == sub })
}

// stop ends the plugin timer when the server stops.
func (t *subscriptions) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.plugin != nil {
		t.plugin.Stop()
	}
}
