package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// maxCachedPages bounds the pages a ListCache holds; past it new pages
// are fetched and not kept until an invalidation empties the cache.
const maxCachedPages = 1024

// ListCache answers the list calls (tools/list, prompts/list,
// resources/list, resources/templates/list) of any snodo.Session from
// memory: each page is kept exactly as the server sent it (nextCursor,
// _meta and caching hints intact), keyed by method and cursor, until the
// server says that list changed (list_changed on a subscription the
// cache holds), or the subscription is renewed after a restart, which
// empties the whole cache because the lists may have changed meanwhile.
//
// A fetch that was under way when its list was invalidated is returned
// to its caller but not kept. At most 1024 pages are kept. The pages are
// the same for every caller: a server whose lists depend on who asks
// (on the client capabilities in a request's _meta, say) should not be
// served through a cache (gateway.WithoutListCache). Its methods are safe
// for concurrent use.
type ListCache struct {
	s      snodo.Session
	mu     sync.Mutex
	pages  map[cacheKey]json.RawMessage
	gen    map[string]uint64      // by list method: bumped by each invalidation
	tools  map[string][]paramSpec // x-mcp-header annotations by tool, from the tool list
	cancel context.CancelFunc
	done   chan struct{}
}

type cacheKey struct{ method, cursor string }

// NewListCache makes a cache for s and starts following s's list
// changes, for as long as ctx lasts or until Close. Read pages with List.
func NewListCache(ctx context.Context, s snodo.Session) *ListCache {
	c := newListCache(s, true)
	ctx, c.cancel = context.WithCancel(ctx)
	go func() {
		defer close(c.done)
		follow(ctx, s, snodo.Filter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}, func(ev snodo.Event) {
			c.invalidateFor(ev.Method)
		}, nil)
	}()
	return c
}

func newListCache(s snodo.Session, own bool) *ListCache {
	c := &ListCache{s: s, pages: map[cacheKey]json.RawMessage{}, gen: map[string]uint64{}, tools: map[string][]paramSpec{}}
	if own {
		c.done = make(chan struct{})
	}
	return c
}

// List returns the page of method ("tools/list", "prompts/list",
// "resources/list" or "resources/templates/list") at cursor ("" for the
// first), from the cache or from the server. The result is raw: decode
// it, and follow its nextCursor with List again.
func (c *ListCache) List(ctx context.Context, method, cursor string) (json.RawMessage, error) {
	var params []byte
	if cursor != "" {
		params = append(jsonrpc.AppendString([]byte(`{"cursor":`), cursor), '}')
	}
	return c.list(ctx, method, params, func(ctx context.Context) (json.RawMessage, error) {
		if params == nil {
			return c.s.Request(ctx, method, nil)
		}
		return c.s.Request(ctx, method, json.RawMessage(params))
	})
}

// Invalidate drops the pages of method, or every page when method is "".
func (c *ListCache) Invalidate(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.pages {
		if method == "" || k.method == method {
			delete(c.pages, k)
		}
	}
	for _, m := range listMethods {
		if method == "" || m == method {
			c.gen[m]++
		}
	}
	if method == "" || method == "tools/list" {
		clear(c.tools)
	}
}

// specs are the annotations of tool name read from the current tool list.
func (c *ListCache) specs(name string) ([]paramSpec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.tools[name]
	return s, ok
}

func (c *ListCache) generation(method string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen[method]
}

// keepSpecs keeps name's annotations, read from the tool list as it was
// at gen, unless it changed since (at most 4096 tools).
func (c *ListCache) keepSpecs(name string, specs []paramSpec, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen["tools/list"] == gen && len(c.tools) < 4096 {
		c.tools[name] = specs
	}
}

// Close stops following the session's list changes (a cache made by
// NewListCache) and waits for that to end. It does not close the
// session. Idempotent.
func (c *ListCache) Close() {
	if c.cancel != nil {
		c.cancel()
		<-c.done
	}
}

var listMethods = []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}

func isListMethod(m string) bool {
	for _, l := range listMethods {
		if l == m {
			return true
		}
	}
	return false
}

// invalidateFor drops what a notification (or a resubscription marker)
// says may have changed.
func (c *ListCache) invalidateFor(method string) {
	switch method {
	case "notifications/tools/list_changed":
		c.Invalidate("tools/list")
	case "notifications/prompts/list_changed":
		c.Invalidate("prompts/list")
	case "notifications/resources/list_changed":
		c.Invalidate("resources/list")
		c.Invalidate("resources/templates/list")
	default:
		if isResubscribed(method) {
			c.Invalidate("")
		}
	}
}

// list answers method's page named by params' cursor from the cache, or
// through fetch, keeping what fetch returns unless the list changed
// meanwhile.
func (c *ListCache) list(ctx context.Context, method string, params []byte, fetch func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	cursor := ""
	if len(params) > 0 {
		if v, err := jsonrpc.Member(params, "cursor"); err == nil && v != nil {
			cursor = string(v)
		}
	}
	key := cacheKey{method, cursor}
	c.mu.Lock()
	if raw, ok := c.pages[key]; ok {
		c.mu.Unlock()
		return raw, nil
	}
	gen := c.gen[method]
	c.mu.Unlock()
	raw, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen[method] == gen && len(c.pages) < maxCachedPages {
		c.pages[key] = raw
	}
	c.mu.Unlock()
	return raw, nil
}

// follow keeps a subscription with filter f open on s until ctx ends,
// calling fn with each event (the resubscription marker included), and
// opening it again (after a pause that grows to 5 s) when it ends. Once
// it is open again fn gets a resubscription marker: the lists may have
// changed while none was open (a remote host restarted, say), and only
// now can a client that lists them again be answered. tried, if not nil,
// is called once, after the first Listen returned.
func follow(ctx context.Context, s snodo.Session, f snodo.Filter, fn func(snodo.Event), tried func()) {
	defer func() {
		if tried != nil {
			tried()
		}
	}()
	pause := 100 * time.Millisecond
	gap := false
	for ctx.Err() == nil {
		sub, err := s.Listen(ctx, f)
		if tried != nil {
			tried()
			tried = nil
		}
		if err == nil {
			pause = 100 * time.Millisecond
			if gap {
				fn(snodo.Event{Method: resubscribedMethod})
				gap = false
			}
			for ev := range sub.Events() {
				fn(ev)
			}
			sub.Close()
			gap = true
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(pause*2, 5*time.Second)
	}
}
