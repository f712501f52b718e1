package remote

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
)

// A served name is a NATS micro service (`nats micro ls|ping|info|stats`
// see it), answered here rather than by nats.go's micro package: micro
// times an endpoint only while its handler runs, and counts only the
// errors the handler reports, but a host's handler hands each call to a
// worker at once (so that one slow call holds up no other). Its statistics timed that hand-off (some 15 µs for calls of
// 2 s) and counted no error. Here each endpoint counts its requests, its
// errors (answers with an error, refusals) and the time from a request's
// arrival to its answer.

// endpointStats are one endpoint's figures, in micro's shape.
type endpointStats struct {
	mu      sync.Mutex
	n, errs int
	lastErr string
	total   time.Duration
}

// record counts one request that took d.
func (e *endpointStats) record(d time.Duration) {
	e.mu.Lock()
	e.n++
	e.total += d
	e.mu.Unlock()
}

// fail counts an error answered to a request.
func (e *endpointStats) fail(why string) {
	e.mu.Lock()
	e.errs++
	e.lastErr = why
	e.mu.Unlock()
}

func (e *endpointStats) snapshot(name, subject, queue string, data any) *micro.EndpointStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &micro.EndpointStats{Name: name, Subject: subject, QueueGroup: queue,
		NumRequests: e.n, NumErrors: e.errs, LastError: e.lastErr, ProcessingTime: e.total}
	if e.n > 0 {
		st.AverageProcessingTime = e.total / time.Duration(e.n)
	}
	if data != nil {
		st.Data, _ = json.Marshal(data)
	}
	return st
}

// service is one advertisement of a served name: its endpoints' queue
// subscriptions and its answers to the $SRV verbs. Withdrawing a name
// stops it; advertising it again makes a new one (a new service id, as
// a restarted micro service has).
type service struct {
	id      string
	started time.Time
	subs    []*nats.Subscription // call, info, listen (queue group); call.HOSTID, hosts
	ctl     []*nats.Subscription // $SRV.PING|INFO|STATS[.NAME[.ID]]
}

// Stop unsubscribes everything: NATS sends no more calls here. The
// calls already delivered are still handled (the endpoints are
// drained).
func (v *service) Stop() error {
	for _, sub := range v.ctl {
		_ = sub.Unsubscribe()
	}
	for _, sub := range v.subs {
		_ = sub.Drain()
	}
	return nil
}

func (h *Host) addService(s *served) error {
	v := &service{id: nuid.Next(), started: time.Now().UTC()}
	queue := h.cfg.prefix + "." + s.name
	fail := func(err error) error {
		_ = v.Stop()
		return fmt.Errorf("remote: serving %s: %w", s.name, err)
	}
	for _, ep := range []struct {
		subject string
		handle  func(*nats.Msg)
	}{
		{s.subj.call, func(m *nats.Msg) { h.onCall(s, m) }},
		{s.subj.info, func(m *nats.Msg) { h.onInfo(s, m) }},
		{s.subj.listen, func(m *nats.Msg) { h.onListen(s, m) }},
	} {
		sub, err := h.serve.QueueSubscribe(ep.subject, queue, ep.handle)
		if err != nil {
			return fail(err)
		}
		_ = sub.SetPendingLimits(-1, -1) // as micro's: the bound is the host's held calls
		v.subs = append(v.subs, sub)
	}
	// This host's own call and listen subjects, and its answer to "which hosts, with
	// how much room": not in the queue group.
	for _, ep := range []struct {
		subject string
		handle  func(*nats.Msg)
	}{
		{s.subj.callTo(h.id), func(m *nats.Msg) { h.onCall(s, m) }},
		{s.subj.listenTo(h.id), func(m *nats.Msg) { h.onListen(s, m) }}, // a pinned session's subscriptions (pin.go)
		{s.subj.hosts, func(m *nats.Msg) { h.onHosts(s, m) }},
	} {
		sub, err := h.serve.Subscribe(ep.subject, ep.handle)
		if err != nil {
			return fail(err)
		}
		_ = sub.SetPendingLimits(-1, -1)
		v.subs = append(v.subs, sub)
	}
	identity := micro.ServiceIdentity{Name: s.name, ID: v.id, Version: serviceVersion, Metadata: map[string]string{
		metaServer: s.name, metaHost: h.id, metaLabel: h.label, metaPrefix: h.cfg.prefix,
	}}
	answer := func(verb micro.Verb) func(*nats.Msg) {
		return func(m *nats.Msg) {
			var v2 any
			switch verb {
			case micro.PingVerb:
				v2 = micro.Ping{ServiceIdentity: identity, Type: micro.PingResponseType}
			case micro.InfoVerb:
				v2 = micro.Info{ServiceIdentity: identity, Type: micro.InfoResponseType,
					Description: "snodo: the MCP server " + s.name + " (JSON-RPC over NATS)",
					Endpoints: []micro.EndpointInfo{
						{Name: "call", Subject: s.subj.call, QueueGroup: queue},
						{Name: "info", Subject: s.subj.info, QueueGroup: queue},
						{Name: "listen", Subject: s.subj.listen, QueueGroup: queue},
					}}
			case micro.StatsVerb:
				v2 = micro.Stats{ServiceIdentity: identity, Type: micro.StatsResponseType, Started: v.started,
					Endpoints: []*micro.EndpointStats{
						s.callStats.snapshot("call", s.subj.call, queue, h.callData(s)),
						s.infoStats.snapshot("info", s.subj.info, queue, nil),
						s.listenStats.snapshot("listen", s.subj.listen, queue, nil),
					}}
			}
			b, _ := json.Marshal(v2)
			_ = m.Respond(b)
		}
	}
	for _, verb := range []micro.Verb{micro.PingVerb, micro.InfoVerb, micro.StatsVerb} {
		for _, subject := range controlSubjects(verb, s.name, v.id) {
			sub, err := h.serve.Subscribe(subject, answer(verb))
			if err != nil {
				return fail(err)
			}
			v.ctl = append(v.ctl, sub)
		}
	}
	s.svc = v
	return nil
}

// controlSubjects are the $SRV subjects a service answers for verb: all
// services, those of its name, and its own.
func controlSubjects(verb micro.Verb, name, id string) []string {
	var out []string
	for _, nameID := range [][2]string{{"", ""}, {name, ""}, {name, id}} {
		if subj, err := micro.ControlSubject(verb, nameID[0], nameID[1]); err == nil {
			out = append(out, subj)
		}
	}
	return out
}

// callData is the call endpoint's Data: what the host's pool can do,
// and the calls it holds and saw cancelled.
func (h *Host) callData(s *served) any {
	return struct {
		PoolState
		InFlight  int64 `json:"in_flight"`
		Cancelled int64 `json:"cancelled"`
	}{h.poolState(s), s.inFlight.Load(), s.cancels.Load()}
}

// hostRoom is a host's answer on a name's hosts subject.
type hostRoom struct {
	ID   string `json:"id"`             // the host's id: it takes calls on call.ID
	Free int    `json:"free"`           // calls it can take now, before its bound
	Opts bool   `json:"opts,omitempty"` // it reads a call's settings in its payload (envOptsPrefix)
}

// onHosts tells a caller looking for room this host's id and free slots.
func (h *Host) onHosts(s *served, r *nats.Msg) {
	if r.Reply == "" {
		return
	}
	free := cap(h.slots) - len(h.slots)
	if ok, _ := canServe(s); !ok {
		free = 0
	}
	b, _ := json.Marshal(hostRoom{ID: h.id, Free: free, Opts: true})
	_ = r.Respond(b)
}
