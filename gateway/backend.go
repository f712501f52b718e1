package gateway

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
)

// What the gateway needs to know of the session it serves, whatever its
// kind: what the server said of itself (for a legacy client's initialize),
// and which member a legacy session is pinned to.

// serverDesc is what a legacy client's initialize result says: the
// backend server's own description.
type serverDesc struct {
	era          snodo.Era
	info         snodo.Implementation
	capabilities snodo.ServerCapabilities
	instructions string
}

// backendInfo picks members for legacy sessions in turn.
type backendInfo struct {
	s    snodo.Session
	next atomic.Uint64
}

func newBackendInfo(s snodo.Session) *backendInfo { return &backendInfo{s: s} }

// member is what a legacy session is pinned to: the session its calls go
// to, and whether that server still lives as it did when pinned.
type member struct {
	s     snodo.Session
	alive func() bool
}

// pin chooses the member a new legacy session stays on: a pool's member
// in turn (one that is up, if any), a supervised client itself (until it
// restarts), a plain client (until it ends), anything else as it is. A
// remote client is taken as it is here: the session's own pin
// (internal/pin, made in openSession) keeps its calls on one server on
// the other side of NATS, and a call that finds that server gone ends
// the session (serve).
func (b *backendInfo) pin() member {
	switch x := b.s.(type) {
	case *supervisor.Pool:
		ms := x.Members()
		if len(ms) == 0 {
			return member{s: x, alive: func() bool { return true }}
		}
		start := int(b.next.Add(1))
		m := ms[start%len(ms)]
		for i := range ms {
			if c := ms[(start+i)%len(ms)]; c.Current() != nil {
				m = c
				break
			}
		}
		restarts := m.Restarts()
		return member{s: m, alive: func() bool {
			return m.Err() == nil && m.Restarts() == restarts && slices.Contains(x.Members(), m)
		}}
	case *supervisor.Client:
		restarts := x.Restarts()
		return member{s: x, alive: func() bool { return x.Err() == nil && x.Restarts() == restarts }}
	case *snodo.Client:
		return member{s: x, alive: func() bool { return x.Err() == nil }}
	}
	return member{s: b.s, alive: func() bool { return true }}
}

// describe is what the server behind s says of itself.
func describe(ctx context.Context, s snodo.Session) (serverDesc, error) {
	var cl *snodo.Client
	switch x := s.(type) {
	case *snodo.Client:
		cl = x
	case *supervisor.Client:
		c, err := x.Await(ctx)
		if err != nil {
			return serverDesc{}, err
		}
		cl = c
	case *supervisor.Pool:
		ms := x.Members()
		if len(ms) == 0 {
			return serverDesc{}, errors.New("the pool has no members")
		}
		for _, m := range ms {
			if c := m.Current(); c != nil {
				cl = c
				break
			}
		}
		if cl == nil {
			c, err := ms[0].Await(ctx)
			if err != nil {
				return serverDesc{}, err
			}
			cl = c
		}
	case *remote.Client:
		si, err := x.Info(ctx)
		if err != nil {
			return serverDesc{}, err
		}
		// A remote client of the legacy era is told of the hosts'
		// legacy-era connection, when they have one (remote.ServeLegacy).
		return serverDesc{era: snodo.Era(si.Era), info: si.ServerInfo, capabilities: si.Capabilities, instructions: si.Instructions}, nil
	default:
		return serverDesc{era: s.Era(), info: snodo.Implementation{Name: "snodo-gateway", Version: "1"}}, nil
	}
	return serverDesc{era: cl.Era(), info: cl.ServerInfo(), capabilities: cl.Capabilities(), instructions: cl.Instructions()}, nil
}
