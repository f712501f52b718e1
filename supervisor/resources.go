package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/seam"
)

// Legacy resource subscriptions (resources/subscribe) belong to one
// server process: its updates arrive on that connection, through the
// snodo.WithNotificationHandler handler given with WithConnectOptions,
// and a restarted server knows nothing of them. So they are not typed
// calls over a Requester (snodo.Calls): a supervised client remembers
// the URIs it subscribed and subscribes them again on each restarted
// server, and a pool keeps each URI on one member. A remote client has
// no such calls: the updates would reach the host's handler, never the
// caller (use Listen with snodo.Filter.ResourceSubscriptions on modern
// servers).

// SubscribeResource asks the server to send
// notifications/resources/updated for uri, as snodo.Client.SubscribeResource
// does (legacy era; snodo.ErrSubscribeUnsupported in the modern era),
// waiting through a restart like a call. The subscription survives
// restarts: the client subscribes uri again on each restarted server
// (the updates sent in the gap are lost; re-read the resource). The
// updates arrive through the snodo.WithNotificationHandler handler given
// with WithConnectOptions. The client remembers one entry per URI
// subscribed and not yet unsubscribed.
func (c *Client) SubscribeResource(ctx context.Context, uri string, opts ...snodo.RequestOption) error {
	return c.subscribeResource(ctx, uri, opts, false)
}

func (c *Client) subscribeResource(ctx context.Context, uri string, opts []snodo.RequestOption, reserved bool) error {
	c.s.mu.Lock()
	_, had := c.s.resources[uri]
	c.s.resources[uri] = struct{}{} // before the call: a restart during it subscribes it again
	c.s.mu.Unlock()
	err := c.resourceCall(ctx, "resources/subscribe", uri, opts, reserved)
	if err != nil && !had {
		c.s.mu.Lock()
		delete(c.s.resources, uri)
		c.s.mu.Unlock()
	}
	return err
}

// UnsubscribeResource ends a SubscribeResource subscription, on the
// current server and for later restarts.
func (c *Client) UnsubscribeResource(ctx context.Context, uri string, opts ...snodo.RequestOption) error {
	return c.unsubscribeResource(ctx, uri, opts, false)
}

func (c *Client) unsubscribeResource(ctx context.Context, uri string, opts []snodo.RequestOption, reserved bool) error {
	c.s.mu.Lock()
	delete(c.s.resources, uri)
	c.s.mu.Unlock()
	return c.resourceCall(ctx, "resources/unsubscribe", uri, opts, reserved)
}

func (c *Client) resourceCall(ctx context.Context, method, uri string, opts []snodo.RequestOption, reserved bool) error {
	_, err := call(ctx, c, method, opts, reserved, func(cl *snodo.Client, ro []snodo.RequestOption) (struct{}, error) {
		if method == "resources/subscribe" {
			return struct{}{}, cl.SubscribeResource(ctx, uri, ro...)
		}
		return struct{}{}, cl.UnsubscribeResource(ctx, uri, ro...)
	})
	return err
}

// applyResources subscribes a new connection to the resources
// SubscribeResource subscribed, before it takes calls.
func (s *state) applyResources(c *snodo.Client) {
	s.mu.Lock()
	uris := slices.Sorted(maps.Keys(s.resources))
	s.mu.Unlock()
	for _, uri := range uris {
		if err := c.SubscribeResource(s.life, uri); err != nil {
			s.cfg.logger.Warn("supervisor: could not subscribe the restarted server to a resource again", "uri", uri, "error", err)
		}
	}
}

// SubscribeResource subscribes one member to uri (see
// Client.SubscribeResource: it survives that member's restarts) and
// keeps uri on that member: the updates arrive on its connection, through
// the snodo.WithNotificationHandler handler given with
// WithConnectOptions, and UnsubscribeResource goes to the same member.
// Subscribing a URI again goes to the member that has it. When the
// member leaves the pool (Shrink closes it, or it gives up), its URIs are
// subscribed on another member. A member whose server goes away during
// the subscribe, or that leaves the pool before uri is recorded as its,
// is passed over for another (subscribing is idempotent).
func (p *Pool) SubscribeResource(ctx context.Context, uri string, opts ...snodo.RequestOption) error {
	var (
		prev   *Client
		passed []*Client // members passed over: they must not keep uri
		failed error     // what the subscribe met on the last of them
	)
	for range maxPoolSize {
		m, err := p.resourceMember(ctx, "resources/subscribe", uri, opts, prev)
		if err != nil {
			return err
		}
		if m == prev {
			// FailFast, and no other member to go to.
			m.s.release()
			return failed
		}
		err = m.subscribeResource(ctx, uri, opts, true)
		switch {
		case err == nil:
			// Recorded under mu only while m is in rotation: a move
			// (Shrink's, or a give-up's) takes m out under mu before it
			// reads what m holds, so it sees uri, or uri goes elsewhere now.
			p.mu.Lock()
			kept := slices.Contains(p.members, m)
			if kept {
				p.resources[uri] = m
			}
			p.mu.Unlock()
			if kept {
				for _, o := range passed {
					if o != m {
						o.forgetResource(uri)
					}
				}
				return nil
			}
			err = fmt.Errorf("supervisor: pool member %s left the pool (Shrink took it out, or it gave up) before %s was recorded as its", m.s.cfg.name, uri)
		case ctx.Err() != nil || !(lostConnection(err) || notSent(err) || m.left(err)):
			return err
		}
		p.cfg.logger.Debug("supervisor: subscribing a resource on another pool member", "member", m.s.cfg.name, "uri", uri, "error", err)
		prev, failed = m, err
		passed = append(passed, m)
	}
	return fmt.Errorf("supervisor: resources/subscribe %s: every pool member it went to left or lost its server: %w", uri, failed)
}

// forgetResource drops uri from what c subscribes again after a restart,
// once another member holds it.
func (c *Client) forgetResource(uri string) {
	c.s.mu.Lock()
	delete(c.s.resources, uri)
	c.s.mu.Unlock()
}

// UnsubscribeResource ends uri's subscription on the member that holds
// it (on the least-loaded member when none does: the server answers).
func (p *Pool) UnsubscribeResource(ctx context.Context, uri string, opts ...snodo.RequestOption) error {
	m, err := p.resourceMember(ctx, "resources/unsubscribe", uri, opts, nil)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.resources[uri] == m {
		delete(p.resources, uri)
	}
	p.mu.Unlock()
	return m.unsubscribeResource(ctx, uri, opts, true)
}

// resourceMember reserves the member holding uri, or the least-loaded
// one, avoid last.
func (p *Pool) resourceMember(ctx context.Context, method, uri string, opts []snodo.RequestOption, avoid *Client) (*Client, error) {
	p.mu.Lock()
	m := p.resources[uri]
	if m != nil && m != avoid && slices.Contains(p.members, m) {
		m.s.inflight.Add(1)
		p.mu.Unlock()
		return m, nil
	}
	p.mu.Unlock()
	return p.pick(ctx, method, avoid, seam.SettingsOf(opts).Timeout, !p.cfg.failFast)
}

// moveResources subscribes the URIs held by members Shrink closed on the
// members that stay.
func (p *Pool) moveResources(gone []*Client) error {
	p.mu.Lock()
	var uris []string
	for uri, m := range p.resources {
		if slices.Contains(gone, m) {
			uris = append(uris, uri)
			delete(p.resources, uri)
		}
	}
	p.mu.Unlock()
	slices.Sort(uris)
	var errs []error
	for _, uri := range uris {
		if err := p.SubscribeResource(p.ctx, uri); err != nil {
			errs = append(errs, fmt.Errorf("resource %s moved off a closed member: %w", uri, err))
		}
	}
	return errors.Join(errs...)
}
