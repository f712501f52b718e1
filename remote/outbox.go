package remote

import (
	"runtime"
	"sync"
)

// outbox gathers the results the host's workers send, so that the
// results of calls that ended together leave in one burst of publishes:
// nats.go's flusher then writes them in one system call, and the NATS
// server reads them in one, where one write each (a worker publishing as
// its call ends, the flusher woken for it alone) cost both processes a
// system call per result.
//
// The first worker to add a result to an empty outbox publishes: it
// yields once, so that the workers the same read of the MCP servers'
// answers woke add theirs, then publishes everything queued, until the
// outbox is empty. The others add theirs and go on at once. Its length
// is bounded by the workers (each adds one result, then runs its next
// call).
type outbox struct {
	mu      sync.Mutex
	queued  []outMsg
	spare   []outMsg // the last batch's slice, for the next
	sending bool     // a worker is publishing: it takes what is added
}

// outMsg is one result: its subject and its bytes, in a replyBufs buffer
// that goes back to the pool once published.
type outMsg struct {
	subject string
	data    *[]byte
}

// send queues a result for publish (nats.go's PublishMsg copies it), and
// publishes the outbox when no worker is doing so.
func (o *outbox) send(subject string, data *[]byte, publish func(subject string, data []byte)) {
	o.mu.Lock()
	o.queued = append(o.queued, outMsg{subject, data})
	if o.sending {
		o.mu.Unlock()
		return
	}
	o.sending = true
	o.mu.Unlock()
	runtime.Gosched() // the workers woken with this one add theirs
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
			publish(m.subject, *m.data)
			putReplyBuf(m.data)
			batch[i] = outMsg{}
		}
		o.mu.Lock()
		o.spare = batch
		o.mu.Unlock()
	}
}
