package remote

import (
	"runtime"
	"sync"
)

// outbox gathers the messages that goroutines publish at about the same
// time, so that they leave in one burst of publishes: nats.go's flusher
// then writes them in one system call, and the NATS server reads them in
// one, where one write each (every goroutine publishing alone, the
// flusher woken for it alone) cost both processes a system call per
// message. The host's results and a client's calls go through one each.
//
// The first goroutine to add to an empty outbox publishes: it yields
// once, so that the goroutines woken with it (the workers whose answers
// came in one read, the callers whose replies did) add theirs, then
// publishes everything queued, until the outbox is empty. The others add
// theirs and go on at once. Its length is bounded by its senders: a
// host's held calls, a client's calls in flight, each adding one message
// and then waiting for something else.
type outbox[T any] struct {
	mu      sync.Mutex
	queued  []T
	spare   []T  // the last batch's slice, for the next
	sending bool // a goroutine is publishing: it takes what is added
}

// send queues m and publishes the outbox, with publish, when no
// goroutine is doing so. publish must not block for long: the messages
// queued behind it wait for it (their senders do not).
func (o *outbox[T]) send(m T, publish func(T)) {
	o.mu.Lock()
	o.queued = append(o.queued, m)
	if o.sending {
		o.mu.Unlock()
		return
	}
	o.sending = true
	o.mu.Unlock()
	runtime.Gosched() // the goroutines woken with this one add theirs
	var zero T
	for {
		o.mu.Lock()
		batch := o.queued
		if len(batch) == 0 {
			o.sending = false
			o.mu.Unlock()
			return
		}
		o.queued = o.spare[:0]
		o.mu.Unlock()
		for i, m := range batch {
			publish(m)
			batch[i] = zero
		}
		o.mu.Lock()
		o.spare = batch
		o.mu.Unlock()
	}
}
