package remote

import (
	"errors"
	"time"

	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/supervisor"
)

// healthEvery is how often a host looks at its pools' members: a name
// whose pool cannot serve is withdrawn within about that long (at once
// when the pool stops).
const healthEvery = 250 * time.Millisecond

// PoolState is what a host's pool for one name can do now: in its info
// (Client.Info) and its micro stats (`nats micro stats NAME`).
type PoolState struct {
	Up         int  `json:"members_up"`         // members whose server is up
	Restarting int  `json:"members_restarting"` // members in rotation whose server is being restarted
	GivenUp    int  `json:"members_given_up"`   // members that left the rotation since the host began (gave up, or the program shrank the pool)
	Held       int  `json:"calls_held"`         // calls and subscriptions the host holds for this name
	Serving    bool `json:"serving"`            // the host advertises the name (false: withdrawn, its pool cannot serve)
}

// poolState looks at s's pool now.
func (h *Host) poolState(s *served) PoolState {
	st := PoolState{Held: int(s.inFlight.Load() + s.subsIn.Load())}
	members := s.pool.Members()
	for _, m := range members {
		if c := m.Current(); c != nil && c.Err() == nil {
			st.Up++
		} else {
			st.Restarting++
		}
	}
	st.GivenUp = max(0, s.size0-len(members))
	h.mu.Lock()
	st.Serving = s.svc != nil
	h.mu.Unlock()
	return st
}

// canServe says whether s's pool can take calls (members in rotation,
// up or restarting), and if not, why.
func canServe(s *served) (bool, error) {
	if err := s.pool.Err(); err != nil {
		return false, err
	}
	if s.pool.Size() == 0 { // per call: Members would copy them
		return false, errors.New("no member is left in its pool")
	}
	return true, nil
}

// watchHealth withdraws s's name (stops its micro service: NATS sends its
// calls to other hosts, and discovery no longer lists this host) while
// its pool cannot serve, and advertises it again when it can. It runs
// until the host stops.
func (h *Host) watchHealth(s *served) {
	defer h.healthWG.Done()
	tick := time.NewTicker(healthEvery)
	defer tick.Stop()
	for {
		select {
		case <-h.healthStop:
			return
		case <-s.pool.Done():
		case <-tick.C:
		}
		ok, why := canServe(s)
		h.mu.Lock()
		if h.draining {
			h.mu.Unlock()
			return
		}
		advertised := s.svc != nil
		switch {
		case !ok && advertised:
			_ = s.svc.Stop()
			s.svc = nil
			h.mu.Unlock()
			h.cfg.logger.Warn("remote: withdrew a name its pool cannot serve; other hosts take its calls", "server", s.name, "host", h.label, "why", why)
		case ok && !advertised:
			err := h.addService(s)
			h.mu.Unlock()
			if err != nil {
				h.cfg.logger.Error("remote: cannot advertise a name again", "server", s.name, "error", err)
			} else {
				h.cfg.logger.Info("remote: serving a name again: its pool recovered", "server", s.name, "host", h.label)
			}
		default:
			h.mu.Unlock()
		}
		if s.pool.Err() != nil {
			return // a stopped pool never recovers
		}
	}
}

// notRunError reports whether a pool's error means the call never
// reached an MCP server: the pool stopped or gave up before one took
// it, or its server went away without reading it. The host refuses such
// a call as not run, so its caller sends it to another host.
func notRunError(s *served, err error) bool {
	return errors.Is(err, sentinel.ErrNotSent) || errors.Is(err, supervisor.ErrGaveUp) ||
		(s.pool.Err() != nil && errors.Is(err, sentinel.ErrClosed))
}
