package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
	"github.com/snodo/snodo/subscription"
	"github.com/snodo/snodo/supervisor"
)

// The bridge's sessions with its client: a legacy client's initialize
// (answered with the served server's info) and a modern client's
// subscriptions.
// The _meta members of a modern request and of a subscription's
// messages.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
)

// listen opens a subscription on a host of the name for a modern
// client's subscriptions/listen: its acknowledgement and events go to the
// client under the client's request id, and its end is the request's
// answer. The client ends it with notifications/cancelled (no answer).
func (b *bridge) listen(ctx context.Context, id, params []byte) {
	var p struct {
		Notifications snodo.Filter `json:"notifications"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		b.writeError(id, &snodo.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params of subscriptions/listen: " + err.Error()})
		return
	}
	sub, err := b.c.Listen(ctx, p.Notifications)
	if ctx.Err() != nil {
		if sub != nil {
			_ = sub.Close()
		}
		return
	}
	if err != nil {
		b.writeError(id, asRPCError(err))
		return
	}
	defer sub.Close()
	ack, err := json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: id}, "notifications": sub.Acknowledged()})
	if err != nil {
		b.writeError(id, asRPCError(err))
		return
	}
	b.write(jsonrpc.AppendNotification(nil, "notifications/subscriptions/acknowledged", ack))
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				if err := sub.Err(); err != nil && !errors.Is(err, subscription.ErrClosed) {
					b.writeError(id, asRPCError(err))
					return
				}
				end, _ := json.Marshal(map[string]any{"resultType": "complete", "_meta": map[string]json.RawMessage{metaSubscriptionID: id}})
				b.writeResult(id, end)
				return
			}
			params, err := withSubscriptionID(ev.Params, id)
			if err != nil {
				b.log.Warn("snodo bridge: an event with malformed params; dropped", "method", ev.Method, "error", err)
				continue
			}
			b.write(jsonrpc.AppendNotification(nil, ev.Method, params))
		case <-ctx.Done():
			return
		}
	}
}

// withSubscriptionID is an event's params with _meta's subscription id
// set to the client's (the host's server knows its own).
func withSubscriptionID(params, id []byte) ([]byte, error) {
	members := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &members); err != nil {
			return nil, err
		}
	}
	meta := map[string]json.RawMessage{}
	if raw := members["_meta"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	meta[metaSubscriptionID] = id
	var err error
	if members["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(members)
}

// initialize answers the client's initialize with what a host of the
// name reports about its server, as far as the bridge can forward it.
func (b *bridge) initialize(ctx context.Context, id, params []byte) {
	var req struct {
		ProtocolVersion string                   `json:"protocolVersion"`
		Capabilities    snodo.ClientCapabilities `json:"capabilities"`
	}
	_ = json.Unmarshal(params, &req)
	b.caps.Store(&req.Capabilities)
	ictx, cancel := context.WithTimeout(ctx, bridgeInfoWait)
	defer cancel()
	si, err := b.c.Info(ictx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		b.writeError(id, asRPCError(fmt.Errorf("snodo bridge: initialize: %w", err)))
		return
	}
	legacy := mcpmethod.LegacyVersions()
	version := legacy[0]
	switch {
	case slices.Contains(legacy, req.ProtocolVersion):
		version = req.ProtocolVersion
	case si.Era == string(snodo.EraLegacy) && slices.Contains(legacy, si.ProtocolVersion):
		version = si.ProtocolVersion
	}
	res := struct {
		ProtocolVersion string                   `json:"protocolVersion"`
		Capabilities    snodo.ServerCapabilities `json:"capabilities"`
		ServerInfo      snodo.Implementation     `json:"serverInfo"`
		Instructions    string                   `json:"instructions,omitempty"`
	}{version, bridgedCapabilities(si.Capabilities), si.ServerInfo, si.Instructions}
	if b.listening.CompareAndSwap(false, true) {
		f := snodo.Filter{
			ToolsListChanged:     si.Capabilities.Tools != nil && si.Capabilities.Tools.ListChanged,
			PromptsListChanged:   si.Capabilities.Prompts != nil && si.Capabilities.Prompts.ListChanged,
			ResourcesListChanged: si.Capabilities.Resources != nil && si.Capabilities.Resources.ListChanged,
		}
		if b.listChanges(b.life, f) {
			res.Capabilities.Tools = keepListChanged(res.Capabilities.Tools, f.ToolsListChanged)
			res.Capabilities.Prompts = keepListChanged(res.Capabilities.Prompts, f.PromptsListChanged)
			if res.Capabilities.Resources != nil {
				res.Capabilities.Resources.ListChanged = f.ResourcesListChanged
			}
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		b.writeError(id, asRPCError(err))
		return
	}
	b.log.Debug("snodo bridge: initialized", "protocolVersion", version, "server", si.ServerInfo.Name, "era", si.Era)
	b.writeResult(id, raw)
}

// listChanges forwards the list changes of the served server to a
// legacy client, as plain notifications: a subscription on a host of
// the name (a host serves one on a legacy server too, from the
// notifications its members send), open until the bridge ends (ctx).
// When it ends (its host went away, or was restarted), it is opened
// again, after a pause that grows from 100 ms to 5 s, and the client is
// sent a list_changed for each list it follows once the new one is
// open: the lists may have changed meanwhile. It returns false when none
// could be opened at first (the capabilities then promise none).
func (b *bridge) listChanges(ctx context.Context, f snodo.Filter) bool {
	if !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged {
		return false
	}
	sub, err := b.c.Listen(ctx, f)
	if err != nil {
		b.log.Warn("snodo bridge: the served server's list changes will not reach the client", "error", err)
		return false
	}
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		for sub != nil {
			b.forwardListChanges(ctx, sub)
			sub.Close()
			sub = b.reopenListChanges(ctx, f)
		}
	}()
	return true
}

// forwardListChanges copies sub's list changes to the client until it
// ends or ctx does.
func (b *bridge) forwardListChanges(ctx context.Context, sub *snodo.Subscription) {
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				b.log.Warn("snodo bridge: the subscription to the served server's list changes ended; opening it again", "error", sub.Err())
				return
			}
			if ev.Method == supervisor.ResubscribedMethod {
				b.listsMayHaveChanged(sub.Acknowledged())
				continue
			}
			b.write(jsonrpc.AppendNotification(nil, ev.Method, nil))
		case <-ctx.Done():
			return
		}
	}
}

// reopenListChanges opens the subscription again, pausing between
// tries, and tells the client its lists may have changed; nil once ctx
// is done.
func (b *bridge) reopenListChanges(ctx context.Context, f snodo.Filter) *snodo.Subscription {
	pause := 100 * time.Millisecond
	for {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		sub, err := b.c.Listen(ctx, f)
		if err == nil {
			b.log.Info("snodo bridge: the subscription to the served server's list changes is open again")
			b.listsMayHaveChanged(f)
			return sub
		}
		if ctx.Err() != nil {
			return nil
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// listsMayHaveChanged sends the client a list_changed for each list f
// follows.
func (b *bridge) listsMayHaveChanged(f snodo.Filter) {
	for _, m := range []struct {
		on     bool
		method string
	}{{f.ToolsListChanged, "notifications/tools/list_changed"}, {f.PromptsListChanged, "notifications/prompts/list_changed"},
		{f.ResourcesListChanged, "notifications/resources/list_changed"}} {
		if m.on {
			b.write(jsonrpc.AppendNotification(nil, m.method, nil))
		}
	}
}

func keepListChanged(c *snodo.ListChangedCapability, on bool) *snodo.ListChangedCapability {
	if c != nil {
		c.ListChanged = on
	}
	return c
}

// bridgedCapabilities is what the bridge can offer a legacy client of
// the served server's capabilities: list changes only through a
// subscription (initialize turns them back on once it is open), no
// resource updates or log messages of a legacy server, the hosts keep
// resource subscriptions and the log level, so those are left out. A
// legacy server's tasks stay: the remote client sends a task's later
// calls to the host, and the host to the member, that holds it.
func bridgedCapabilities(c snodo.ServerCapabilities) snodo.ServerCapabilities {
	out := snodo.ServerCapabilities{Completions: c.Completions, Experimental: c.Experimental, Tasks: c.Tasks}
	if c.Tools != nil {
		out.Tools = &snodo.ListChangedCapability{}
	}
	if c.Prompts != nil {
		out.Prompts = &snodo.ListChangedCapability{}
	}
	if c.Resources != nil {
		out.Resources = &snodo.ResourcesCapability{}
	}
	return out
}
