package snodo

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo/internal/seam"
)

// notificationTaps are functions that see every notification a
// connection receives, besides its notification handler: package remote
// lends them (internal/seam's TapNotifications) to a host, which forwards
// a legacy server's notifications to its remote subscribers. They run on
// the connection's reader and must not block.
type notificationTaps struct {
	n    atomic.Int32 // how many: none costs one atomic load
	mu   sync.Mutex
	seq  int
	taps map[int]func(method string, params []byte)
}

func (t *notificationTaps) call(method string, params json.RawMessage) {
	if t.n.Load() == 0 {
		return
	}
	t.mu.Lock()
	fns := make([]func(string, []byte), 0, len(t.taps))
	for _, fn := range t.taps {
		fns = append(fns, fn)
	}
	t.mu.Unlock()
	for _, fn := range fns {
		fn(method, params)
	}
}

func (t *notificationTaps) add(fn func(method string, params []byte)) (stop func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.taps == nil {
		t.taps = map[int]func(string, []byte){}
	}
	t.seq++
	id := t.seq
	t.taps[id] = fn
	t.n.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			delete(t.taps, id)
			t.n.Add(-1)
			t.mu.Unlock()
		})
	}
}

func init() {
	seam.TapNotifications = func(c any, fn func(method string, params []byte)) func() {
		return c.(*Client).taps.add(fn)
	}
}
