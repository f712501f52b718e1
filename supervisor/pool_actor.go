package supervisor

import (
	"fmt"
	"slices"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
)

// memberEnded takes a stopped member out of rotation. When the last one
// gave up, the pool stops with its error.
func (p *Pool) memberEnded(who *protoactor.PID) (last bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.members, func(m *Client) bool { return m.PID().Equal(who) })
	if i < 0 {
		return false, nil
	}
	m := p.members[i]
	p.members = slices.Delete(p.members, i, i+1)
	<-m.s.stopped // Terminated follows Stopped
	return len(p.members) == 0 && !p.closing, m.Err()
}

// shutdown runs on the pool actor while it stops: members are closed in
// the background; Done waits for them.
func (p *Pool) shutdown() {
	p.mu.Lock()
	p.closing = true
	if p.reason == nil {
		p.reason = snodo.ErrStopped
	}
	members := p.members
	p.members, p.stopping = nil, members
	p.notifyLocked()
	reason := p.reason
	p.mu.Unlock()
	p.unwatch()
	for _, m := range members {
		// The reason is recorded before the pool stops, so a member never
		// reads the pool's end as its owner's exit.
		m.s.stop(reason)
		p.bg.Go(func() { <-m.Done() })
	}
}

func (p *Pool) actorStopped() {
	close(p.stopped)
	go func() {
		p.bg.Wait()
		close(p.done)
	}()
}

// poolActor is the pool's place in the actor tree: it watches the owner
// and each member's supervisor.
type poolActor struct{ p *Pool }

// watchMember asks the pool actor to watch a new member.
type watchMember struct{ pid *protoactor.PID }

func (*watchMember) IgnoreDeadLetterLogging() {}

// Receive handles one message; a panic stops the pool.
func (a *poolActor) Receive(ctx protoactor.Context) {
	p := a.p
	defer func() {
		if r := recover(); r != nil {
			p.cfg.logger.Error("supervisor: pool actor panicked; stopping the pool", "panic", r)
			ctx.Stop(ctx.Self())
		}
	}()
	switch msg := ctx.Message().(type) {
	case *protoactor.Started:
		if owner := p.cfg.owner; owner != nil {
			ctx.Watch(owner)
		}
	case *watchMember:
		ctx.Watch(msg.pid)
	case *protoactor.Terminated:
		if owner := p.cfg.owner; owner != nil && msg.Who.Equal(owner) {
			p.mu.Lock()
			if p.reason == nil {
				p.reason = fmt.Errorf("%w: actor %s terminated", snodo.ErrOwnerExited, owner.Id)
			}
			p.mu.Unlock()
			ctx.Stop(ctx.Self())
			return
		}
		if last, err := p.memberEnded(msg.Who); last {
			p.cfg.logger.Error("supervisor: every pool member has stopped; stopping the pool", "error", err)
			p.mu.Lock()
			if p.reason == nil {
				p.reason = err
			}
			p.mu.Unlock()
			ctx.Stop(ctx.Self())
		}
	case *snodoactor.ExitSignal:
		p.mu.Lock()
		if p.reason == nil {
			p.reason = msg.Reason
		}
		p.mu.Unlock()
		ctx.Stop(ctx.Self())
	case *protoactor.Stopping:
		p.shutdown()
	case *protoactor.Stopped:
		p.actorStopped()
	default:
		snodo.HandleCall(ctx, p) // call messages, run off the mailbox
	}
}
