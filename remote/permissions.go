package remote

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/nats-io/nats.go"
	"github.com/snodo/snodo/internal/mcpmethod"
)

// NATS reports a permissions violation asynchronously: the server
// answers a publish or a subscription it refuses with an -ERR that
// nats.go hands to the connection's error handler (and keeps as its
// LastError) without failing the call that caused it. This file turns
// those into errors where they belong: NewHost fails, a call fails at
// once, Discover fails.

// deniedRe finds the subject of a violation ("... for Publish to
// "SUBJ"" or "... for Subscription to "SUBJ"").
var deniedRe = regexp.MustCompile(`(?i)for (Publish|Subscription) to "([^"]+)"`)

// denied parses a permissions violation: what was refused ("publish" or
// "subscription") and on which subject. ok is false for other errors.
func denied(err error) (what, subject string, ok bool) {
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return "", "", false
	}
	m := deniedRe.FindStringSubmatch(err.Error())
	if m == nil {
		return "", "", true
	}
	return strings.ToLower(m[1]), m[2], true
}

// permissionError says what the NATS user may not do, and what to do.
func permissionError(who string, err error) error {
	return fmt.Errorf("%s: the NATS server refused it: %w; grant this NATS user the permission (see docs/security.md for what hosts and callers need)", who, err)
}

// flushDenied flushes nc (bounded by ctx) and returns the permissions
// violation the NATS server sent for what nc sent before it, if any:
// the server answers in order, so its -ERR is read before the flush's
// PONG.
func flushDenied(ctx context.Context, nc *nats.Conn) error {
	if err := nc.FlushWithContext(ctx); err != nil {
		return err
	}
	if err := nc.LastError(); err != nil {
		if _, _, ok := denied(err); ok {
			return err
		}
	}
	return nil
}

// asyncRouter passes the permission violations of one connection to the
// clients using it: a call whose publish the NATS server refused fails
// at once, naming the violation, rather than wait for its heartbeats.
// One per connection, installed in front of the connection's own error
// handler (which still sees every error) by the first client.
type asyncRouter struct {
	mu      sync.Mutex
	clients map[*Client]struct{}
}

// routers holds each connection's router, by a weak pointer: the entry
// goes when the connection is garbage collected.
var routers sync.Map // weak.Pointer[nats.Conn] → *asyncRouter

// routeDenials makes c hear the permission violations of its
// connection until the returned stop is called.
func routeDenials(nc *nats.Conn, c *Client) (stop func()) {
	key := weak.Make(nc)
	fresh := &asyncRouter{clients: map[*Client]struct{}{}}
	v, loaded := routers.LoadOrStore(key, fresh)
	r := v.(*asyncRouter)
	if !loaded {
		prev := nc.ErrorHandler()
		nc.SetErrorHandler(func(conn *nats.Conn, sub *nats.Subscription, err error) {
			r.dispatch(err)
			if prev != nil {
				prev(conn, sub, err)
			}
		})
		runtime.AddCleanup(nc, func(k weak.Pointer[nats.Conn]) { routers.Delete(k) }, key)
	}
	r.mu.Lock()
	r.clients[c] = struct{}{}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.clients, c)
		r.mu.Unlock()
	}
}

func (r *asyncRouter) dispatch(err error) {
	what, subject, ok := denied(err)
	if !ok || what != "publish" {
		return
	}
	r.mu.Lock()
	clients := make([]*Client, 0, len(r.clients))
	for c := range r.clients {
		clients = append(clients, c)
	}
	r.mu.Unlock()
	for _, c := range clients {
		c.publishDenied(subject, err)
	}
}

// publishDenied fails the calls of c sent to subject that have heard
// nothing from a host yet: the NATS server refused to publish them.
func (c *Client) publishDenied(subject string, err error) {
	if subject == c.subj.listen || strings.HasPrefix(subject, c.subj.listen+".") {
		c.listenDenied(err)
		return
	}
	if subject != c.subj.call && !strings.HasPrefix(subject, c.subj.call+".") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.calls { // under mu: the calls reuse their pendings once they end
		if !p.heard.Load() {
			select {
			case p.denied <- err:
			default:
			}
		}
	}
}

// listenDenied fails the Listens of c that no host has acknowledged yet:
// the NATS server refused to publish their requests.
func (c *Client) listenDenied(err error) {
	c.mu.Lock()
	var ss []*hosted
	for _, s := range c.subs {
		if s.Host() == "" {
			ss = append(ss, s)
		}
	}
	c.mu.Unlock()
	for _, s := range ss {
		s.stop(permissionError(fmt.Sprintf("remote: %s on %s was not sent", mcpmethod.Listen, c.name), err))
	}
}
