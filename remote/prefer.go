package remote

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo/internal/natsname"
)

// A call a host refused before it ran (it was full, draining or could
// not serve) goes next to another host with room, when the caller knows
// one: NATS picks a member of a queue group at random, so a retry sent
// to the group lands on the full host again as often as not. The caller
// asks the name's hosts subject which hosts there are and how many calls
// each can take (every host answers), at most once per peersRefresh,
// and sends the retry to a host's own call subject (call.HOSTID). A host
// that refused is avoided for busyFor; with no other host known to have
// room, the retry goes to the queue group, after its pause.
const (
	// peersRefresh is the least time between two asks.
	peersRefresh = 100 * time.Millisecond
	// peersStale is how long the answers are used.
	peersStale = time.Second
	// peersWait bounds one ask; peersQuiet ends it early once answers
	// stop coming (generous: a host's answer late under load would leave
	// it out, and the retries with it).
	peersWait  = 500 * time.Millisecond
	peersQuiet = 100 * time.Millisecond
	// maxPeers bounds the answers one ask reads.
	maxPeers = 1024
	// busyFor is how long a host that refused a call is avoided.
	busyFor = 250 * time.Millisecond
)

// peers is what a Client knows of the hosts of its name, for retries.
type peers struct {
	mu     sync.Mutex
	list   []hostRoom           // the last answers, with the calls sent since taken off Free
	asked  time.Time            // when the last ask began
	busy   map[string]time.Time // host id → avoided until
	flight chan struct{}        // closed when the ask under way ends
}

// retryTo is the subject for a call that refusedBy (a host id, or "")
// refused before it ran: a host's own call subject when another one is
// known to have room, else the queue group's.
func (c *Client) retryTo(ctx context.Context, refusedBy string) string {
	p := &c.peers
	now := time.Now()
	p.mu.Lock()
	if p.busy == nil {
		p.busy = map[string]time.Time{}
	}
	for id, until := range p.busy {
		if now.After(until) {
			delete(p.busy, id)
		}
	}
	if refusedBy != "" {
		p.busy[refusedBy] = now.Add(busyFor)
	}
	if id := p.pick(now); id != "" {
		p.mu.Unlock()
		return c.subj.callTo(id)
	}
	if now.Sub(p.asked) < peersRefresh && p.flight == nil {
		p.mu.Unlock()
		return c.subj.call
	}
	f := p.flight
	if f == nil {
		f = make(chan struct{})
		p.flight, p.asked = f, now
		p.mu.Unlock()
		list := c.askHosts(ctx)
		p.mu.Lock()
		p.list, p.flight = list, nil
		close(f)
	} else {
		p.mu.Unlock()
		select {
		case <-f:
		case <-ctx.Done():
			return c.subj.call
		}
		p.mu.Lock()
	}
	id := p.pick(time.Now())
	p.mu.Unlock()
	if id == "" {
		return c.subj.call
	}
	return c.subj.callTo(id)
}

// forget drops a host that no longer takes calls on its own subject.
func (c *Client) forget(id string) {
	p := &c.peers
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, h := range p.list {
		if h.ID == id {
			p.list = append(p.list[:i:i], p.list[i+1:]...)
			return
		}
	}
}

// pick chooses a host with room that is not avoided, at random weighted
// by its room, and counts the call against it; "" when there is none.
// p.mu is held.
func (p *peers) pick(now time.Time) string {
	if now.Sub(p.asked) > peersStale {
		return ""
	}
	total := 0
	for _, h := range p.list {
		if _, avoided := p.busy[h.ID]; !avoided && h.Free > 0 {
			total += h.Free
		}
	}
	if total == 0 {
		return ""
	}
	n := rand.N(total)
	for i := range p.list {
		h := &p.list[i]
		if _, avoided := p.busy[h.ID]; avoided || h.Free <= 0 {
			continue
		}
		if n < h.Free {
			h.Free--
			return h.ID
		}
		n -= h.Free
	}
	return ""
}

// askHosts asks every host of the name for its id and room, and returns
// the answers that came within peersWait (less once they stop for
// peersQuiet). Nothing on any failure: the retry then goes to the queue
// group, as before there was any asking.
func (c *Client) askHosts(ctx context.Context) []hostRoom {
	inbox := c.nc.NewRespInbox()
	answers := make(chan *nats.Msg, 64)
	sub, err := c.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil
	}
	defer func() { _ = sub.Unsubscribe() }()
	if c.nc.PublishRequest(c.subj.hosts, inbox, nil) != nil {
		return nil
	}
	wait := time.NewTimer(peersWait)
	defer wait.Stop()
	var quiet <-chan time.Time
	var out []hostRoom
	for len(out) < maxPeers {
		select {
		case m := <-answers:
			var h hostRoom
			if json.Unmarshal(m.Data, &h) == nil && natsname.Valid.MatchString(h.ID) && h.Free >= 0 {
				out = append(out, h)
			}
			quiet = time.After(peersQuiet)
		case <-quiet:
			return out
		case <-wait.C:
			return out
		case <-ctx.Done():
			return out
		}
	}
	return out
}
