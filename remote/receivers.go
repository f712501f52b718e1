package remote

import (
	"errors"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// receivers take a served name's calls from its queue-group subscription
// (a synchronous one) and run each on the goroutine that received it.
// Bare request/reply answers on nats.go's delivery goroutine; a host
// cannot, since a call may run for minutes, but it need not hand every
// call from that goroutine to another either: each receiver waits in
// NextMsg, and one that gets a call first makes sure another is waiting
// (starting one when none is), then runs the call. The hand-off is then
// off the call's path, and at most one per burst of calls.
//
// A receiver is counted in the host's held calls from its start to its
// end, so Shutdown's wait for the held calls covers the calls the
// receivers run and the ones they are about to take. The subscription's
// drain (a withdrawal, Shutdown) waits until the receivers have taken
// every call NATS delivered (nats.go counts what NextMsg returns), then
// closes it: the receivers end. There are at most maxHeld+1 (every held
// call running on one, and one more to refuse the calls past the bound);
// a receiver that waited workerIdle for a call ends, unless no other is
// waiting.
type receivers struct {
	s       *served
	sub     *nats.Subscription
	running atomic.Int32 // receivers
	waiting atomic.Int32 // receivers waiting for a call, or about to
}

// startReceivers starts sub's first receiver. The caller holds no held
// call of its own, so the host must not be waiting for them (it is
// connecting, or advertising a name again while serving).
func (h *Host) startReceivers(s *served, sub *nats.Subscription) {
	h.addReceiver(&receivers{s: s, sub: sub})
}

// addReceiver starts one more receiver for q, within its bound.
func (h *Host) addReceiver(q *receivers) {
	if q.running.Add(1) > int32(h.cfg.maxHeld)+1 {
		q.running.Add(-1)
		return
	}
	q.waiting.Add(1)
	h.held.Add(1)
	go h.receive(q)
}

// receive is one receiver's loop.
func (h *Host) receive(q *receivers) {
	defer h.held.Done()
	defer q.running.Add(-1)
	for {
		m, err := q.sub.NextMsg(workerIdle)
		if errors.Is(err, nats.ErrTimeout) {
			for {
				n := q.waiting.Load()
				if n < 2 {
					break // the last one waiting stays
				}
				if q.waiting.CompareAndSwap(n, n-1) {
					return
				}
			}
			continue
		}
		if q.waiting.Add(-1) == 0 && err == nil {
			h.addReceiver(q) // the next call finds one waiting
		}
		if err != nil {
			return // drained or closed: no more calls come
		}
		if j, ok := h.accept(m, &q.s.callStats, q.s.run); ok {
			h.runJob(j)
		}
		q.waiting.Add(1)
	}
}
