package supervisor

import (
	"slices"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
)

// memberEnded takes a stopped member out of rotation (Done still waits
// for its servers) and returns it, nil if it was not in rotation. When
// the last one gave up, the pool stops with its error.
func (p *Pool) memberEnded(who *protoactor.PID) (m *Client, last bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.members, func(m *Client) bool { return m.PID().Equal(who) })
	if i < 0 {
		return nil, false, nil
	}
	m = p.members[i]
	p.members = slices.Delete(p.members, i, i+1)
	p.notifyLocked()
	<-m.s.stopped // Terminated follows Stopped
	// Its servers may not be reaped yet (one abandoned for ignoring EOF is
	// being killed): the pool's Done waits for them too. Before the actor
	// stops, so before actorStopped waits.
	p.bg.Go(func() { <-m.Done() })
	p.lastEnd = m.Err()
	// With a Grow starting members, the pool lives on: Grow stops it if
	// none of them comes up.
	return m, len(p.members) == 0 && p.adding == 0 && !p.closing, m.Err()
}

// shutdown runs on the pool actor while it stops: members are closed in
// the background; Done waits for them.
func (p *Pool) shutdown(ctx protoactor.Context) {
	reason := p.owned.Reason() // settled by the Life before Stopping
	p.mu.Lock()
	p.closing = true
	members := slices.Concat(p.members, p.leaving) // Shrink's too: still the pool's
	p.members, p.leaving, p.stopping = nil, nil, members
	p.notifyLocked()
	p.mu.Unlock()
	for _, m := range members {
		// No Terminated for a pool that is gone (a dead letter): unwatch
		// first; the member's reason is the pool's.
		ctx.Unwatch(m.PID())
		m.s.stop(reason)
		p.bg.Go(func() { <-m.Done() })
	}
	p.cancel(reason) // after the stops, so that members keep the pool's reason; aborts Grow's starts
}

func (p *Pool) actorStopped() {
	close(p.stopped)
	// A pool whose start failed (cfg.kill) tells through its PoolReady.
	owner, tell := p.cfg.owner, endToOwner(p.cfg, p.owned.Reason()) && !p.cfg.kill.Load()
	origin := snodo.Origin{Server: p.cfg.name}
	if tell {
		p.sys.Root.Send(owner, &Ended{Pool: p, Err: p.owned.Reason(), Origin: origin})
	}
	go func() {
		p.bg.Wait()
		p.growing.Wait()
		close(p.done)
		if tell {
			p.sys.Root.Send(owner, &Reaped{Pool: p, Origin: origin})
		}
	}()
}

// poolActor is the pool's place in the actor tree: under the pool's
// life.Life (internal/life) (owner watch, exit signals, the first reason, a panic stops
// the pool) it watches each member's supervisor.
type poolActor struct{ p *Pool }

// watchMember asks the pool actor to watch a new member.
type watchMember struct{ pid *protoactor.PID }

func (*watchMember) IgnoreDeadLetterLogging() {}

// Receive handles one message.
func (a *poolActor) Receive(ctx protoactor.Context) {
	p := a.p
	switch msg := ctx.Message().(type) {
	case *watchMember:
		ctx.Watch(msg.pid)
	case *protoactor.Terminated:
		_, last, err := p.memberEnded(msg.Who)
		switch {
		case last:
			p.cfg.logger.Error("supervisor: every pool member has stopped; stopping the pool", "error", err)
			p.owned.Stop(err)
		}
	case *protoactor.Stopping:
		p.shutdown(ctx)
	case *protoactor.Stopped:
		p.actorStopped()
	default:
		p.calls(ctx) // call messages, run off the mailbox
	}
}
