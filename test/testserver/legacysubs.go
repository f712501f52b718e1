package testserver

import (
	"strings"
	"sync"
)

// refusedPrefix: resources/subscribe for a URI with it is refused
// (-32602), as a server refuses a resource it cannot watch.
const refusedPrefix = "test://refuse/"

// Legacy resource subscriptions: resources/subscribe and
// resources/unsubscribe keep a set of URIs; test/touch sends
// notifications/resources/updated for a URI only while it is subscribed,
// as a real legacy server does.
type legacySubs struct {
	mu   sync.Mutex
	uris map[string]bool
}

func (l *legacySubs) set(uri string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.uris == nil {
		l.uris = map[string]bool{}
	}
	if on {
		l.uris[uri] = true
	} else {
		delete(l.uris, uri)
	}
}

func (l *legacySubs) has(uri string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.uris[uri]
}

type uriParams struct {
	URI string `json:"uri"`
}

func (s *server) resourcesSubscribe(req *request) (any, *rpcError) {
	return s.legacySubscription(req, true)
}

func (s *server) resourcesUnsubscribe(req *request) (any, *rpcError) {
	return s.legacySubscription(req, false)
}

func (s *server) legacySubscription(req *request, on bool) (any, *rpcError) {
	if req.modern {
		return nil, errMethodNotFound(req.method)
	}
	var p uriParams
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if p.URI == "" {
		return nil, errInvalidParams("uri is required")
	}
	if on && strings.HasPrefix(p.URI, refusedPrefix) {
		return nil, errInvalidParams("resource " + p.URI + " cannot be subscribed to")
	}
	s.legacy.set(p.URI, on)
	if on && s.cfg.updatedOnSub {
		s.notify("notifications/resources/updated", obj{"uri": p.URI})
	}
	return obj{}, nil
}

// touch: the resource at uri changed.
func (s *server) touch(req *request) (any, *rpcError) {
	var p uriParams
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if !s.legacy.has(p.URI) {
		return obj{"notified": false}, nil
	}
	s.notify("notifications/resources/updated", obj{"uri": p.URI})
	return obj{"notified": true}, nil
}
