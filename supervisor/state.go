package supervisor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/life"
	"github.com/snodo/snodo/internal/telemetry"
)

// state is what the supervisor actor and the Client facade share: the
// current connection and how supervision ends. The actor writes it; calls
// read it under mu and wait on changed.
type state struct {
	cfg    *config
	meters *telemetry.Conn // restarts and give-ups; nil when metrics are off
	target snodo.Target
	sys    *protoactor.ActorSystem
	pid    *protoactor.PID
	facade *Client // the Client the owner's Ended and Reaped name

	life     context.Context         // owner of every connection; ends with supervision
	stopLife context.CancelCauseFunc // cancelled once the last Close returned
	owned    life.Life               // the actor's stop reason and owner link

	inflight atomic.Int64 // calls using this supervisor right now
	draining atomic.Bool  // drained is waiting: a call ending at zero notifies
	restarts atomic.Int64 // restarts since Connect

	mu       sync.Mutex
	client   *snodo.Client            // nil while restarting
	last     *snodo.Client            // the last connection installed: its era and input handling
	level    snodo.LoggingLevel       // SetLoggingLevel's, for the servers of later restarts
	live     map[*snodo.Client]func() // connections to close when supervision ends, with their kill (connopts.Lent)
	changed  chan struct{}            // closed and replaced when client or ended changes
	lastExit error                    // the exit being recovered from
	nextTry  time.Time                // when the next attempt starts
	ended    bool                     // the actor is stopping: no new connections

	first    chan struct{} // closed on the first outcome: connected, or stopped
	firstErr error

	bg      sync.WaitGroup // connect goroutines and closers
	stopped chan struct{}  // the actor has stopped
	done    chan struct{}  // stopped, and every server reaped
}

func newState(cfg *config, target snodo.Target, sys *protoactor.ActorSystem) *state {
	return &state{
		cfg: cfg, target: target, sys: sys, level: cfg.level,
		meters:  telemetry.New(nil, cfg.meter).ForConn(target.String()),
		live:    map[*snodo.Client]func(){},
		changed: make(chan struct{}),
		first:   make(chan struct{}),
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// notifyLocked wakes every waiting call, and a pool's. Hold mu.
func (s *state) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
	if s.cfg.onChange != nil {
		s.cfg.onChange()
	}
}

// status says whether a server is up and answering, and whether
// supervision is ending (the actor is stopping or stopped).
func (s *state) status() (up, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client != nil && s.client.Err() == nil, s.ended
}

// stop records why supervision ends (the first reason wins) and stops
// the actor. Safe from any goroutine.
func (s *state) stop(reason error) { s.owned.Stop(reason) }

func (s *state) recordReason(reason error) { s.owned.Record(reason) }

// why is the recorded reason, even before the actor has stopped.
func (s *state) why() error { return s.owned.Reason() }

// Err is why supervision ended, nil while it runs.
func (s *state) Err() error {
	select {
	case <-s.stopped:
		return s.owned.Reason()
	default:
		return nil
	}
}

// adopt registers a connection Connect just returned, and kill, which
// stops its server for good, unless supervision is ending: then the
// caller must close it.
func (s *state) adopt(c *snodo.Client, kill func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.live[c] = kill
	return true
}

// install makes c the connection calls use.
func (s *state) install(c *snodo.Client) {
	s.mu.Lock()
	s.client, s.last, s.lastExit = c, c, nil
	s.notifyLocked()
	s.mu.Unlock()
}

// lost takes the dead connection out of use; calls now wait or fail fast.
// Done waits until its server is reaped. A server lost unexpectedly is
// abandoned for a new one, so one still running (it closed its stdout, or
// stopped reading) and ignoring EOF is signalled (SIGTERM, then SIGKILL
// to its process group), as the server of a failed Connect is:
// otherwise it would run on beside its replacement, and Done never close.
func (s *state) lost(c *snodo.Client, reason error, next time.Time) {
	s.mu.Lock()
	if s.client == c {
		s.client = nil
	}
	kill := s.live[c]
	delete(s.live, c)
	s.lastExit, s.nextTry = reason, next
	s.notifyLocked()
	s.mu.Unlock()
	abandoned := unexpected(reason)
	s.bg.Go(func() {
		if abandoned && kill != nil {
			kill()
		}
		<-c.Done()
	})
}

// release ends one call's use of the supervisor; the last one wakes a
// drained waiting for it.
func (s *state) release() {
	if s.inflight.Add(-1) == 0 && s.draining.Load() {
		s.mu.Lock()
		s.notifyLocked()
		s.mu.Unlock()
	}
}

// drained reports whether no call uses the supervisor any more; it
// returns false if it has stopped first, or limit has passed. Calls are
// no longer given to it (a pool took it out of rotation).
func (s *state) drained(limit time.Duration) bool {
	s.draining.Store(true)
	expired := time.NewTimer(limit)
	defer expired.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if s.inflight.Load() == 0 {
			return true
		}
		select {
		case <-changed:
		case <-s.stopped:
			return false
		case <-expired.C:
			return false
		}
	}
}

// applyLevel gives a new connection the level SetLoggingLevel set, if
// any, before it takes calls.
func (s *state) applyLevel(c *snodo.Client) {
	s.mu.Lock()
	level := s.level
	s.mu.Unlock()
	if level == "" {
		return
	}
	if err := c.SetLoggingLevel(s.life, level); err != nil {
		s.cfg.logger.Warn("supervisor: could not set the log level of the restarted server", "level", level, "error", err)
	}
}

// latest is the last connection installed, nil before the first.
func (s *state) latest() *snodo.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// current is the live connection, or nil while restarting.
func (s *state) current() *snodo.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// settleFirst reports Connect's outcome once; it says whether it did now.
func (s *state) settleFirst(err error) bool {
	select {
	case <-s.first:
		return false
	default:
	}
	s.firstErr = err
	close(s.first)
	return true
}

// shutdown runs on the actor while it stops: every connection is closed
// before the actor stops (so their callers and subscriptions see a -32000
// wrapping why supervision ended, never the owner exit the connections
// would see once this actor is gone), then the life context is cancelled.
// Each Close returns once stdin is closed and callers are answered;
// reaping goes on in the background.
func (s *state) shutdown() {
	reason := s.owned.Reason() // settled by the Life before Stopping
	s.mu.Lock()
	s.ended = true
	clients := make(map[*snodo.Client]func(), len(s.live))
	for c, kill := range s.live {
		clients[c] = kill
	}
	s.live, s.client = nil, nil
	s.notifyLocked()
	s.mu.Unlock()
	var closing sync.WaitGroup
	for c, kill := range clients {
		closing.Go(func() { _ = c.Close() })
		s.bg.Go(func() { s.reap(c, kill) })
	}
	closing.Wait()
	s.stopLife(reason) // aborts a Connect in progress
}

// reap returns once c's server is reaped, c being closed. If the servers
// are to be stopped for good (cfg.kill: the pool's start failed), one
// that ignores EOF is first signalled as a failed snodo.Connect does.
func (s *state) reap(c *snodo.Client, kill func()) {
	if s.cfg.kill.Load() {
		kill()
	}
	<-c.Done()
}

// actorStopped runs in *Stopped: Done closes once every server is reaped.
func (s *state) actorStopped() {
	started := !s.settleFirst(s.why()) // else Connect fails with the reason
	close(s.stopped)
	owner, c := s.cfg.owner, s.facade
	started = started && endToOwner(s.cfg, s.why())
	if started {
		s.sys.Root.Send(owner, &Ended{Client: c, Err: s.why(), Origin: s.cfg.origin()})
	}
	go func() {
		s.bg.Wait()
		close(s.done)
		if started {
			s.sys.Root.Send(owner, &Reaped{Client: c, Origin: s.cfg.origin()})
		}
	}()
}
