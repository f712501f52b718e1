package testserver

import (
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// peer tracks requests the server sends to the client.
type peer struct {
	s         *server
	next      atomic.Int64
	mu        sync.Mutex
	pending   map[string]chan []byte
	unmatched map[chan []byte]struct{} // waiters for responses matching no pending id
}

func (p *peer) init(s *server) {
	p.s = s
	p.pending = make(map[string]chan []byte)
	p.unmatched = make(map[chan []byte]struct{})
}

// newID returns the next server request id ("s1", "s2", …) as raw JSON.
func (p *peer) newID() json.RawMessage {
	return json.RawMessage(strconv.Quote("s" + strconv.FormatInt(p.next.Add(1), 10)))
}

// register returns the channel that will receive the response with id.
func (p *peer) register(id json.RawMessage) chan []byte {
	ch := make(chan []byte, 1)
	p.mu.Lock()
	p.pending[idKey(id)] = ch
	p.mu.Unlock()
	return ch
}

func (p *peer) unregister(id json.RawMessage) {
	p.mu.Lock()
	delete(p.pending, idKey(id))
	p.mu.Unlock()
}

// deliver routes a client response line to whoever waits for it.
func (p *peer) deliver(id json.RawMessage, line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := idKey(id)
	if ch, ok := p.pending[key]; ok {
		delete(p.pending, key)
		ch <- line
		return
	}
	for ch := range p.unmatched {
		select {
		case ch <- line:
		default:
		}
	}
}

// call sends one request to the client and waits up to timeout for the
// response line (nil on timeout or cancellation).
func (s *server) call(req *request, method string, params any, timeout time.Duration) []byte {
	id := s.peer.newID()
	ch := s.peer.register(id)
	defer s.peer.unregister(id)
	s.writeLine(requestLine(id, method, params))
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line := <-ch:
		return line
	case <-t.C:
	case <-req.ctx.Done():
	}
	return nil
}

func requestLine(id json.RawMessage, method string, params any) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"method":`...)
	b = append(b, encode(method)...)
	if raw, ok := params.(json.RawMessage); params != nil && (!ok || raw != nil) {
		b = append(b, `,"params":`...)
		b = append(b, encode(params)...)
	}
	return append(b, '}')
}

type serverRequestParams struct {
	Method        string          `json:"method"`
	Params        json.RawMessage `json:"params"`
	Count         int             `json:"count"`
	Concurrent    bool            `json:"concurrent"`
	TimeoutMs     int             `json:"timeoutMs"`
	CancelAfterMs int             `json:"cancelAfterMs"`
	RawRequest    string          `json:"rawRequest"`
}

// lateGrace is how long a cancelled server request waits for a late answer.
const lateGrace = 300 * time.Millisecond

func (s *server) serverRequest(req *request) (any, *rpcError) {
	p := serverRequestParams{Method: "roots/list", Count: 1, TimeoutMs: 10000}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	deadline := time.Now().Add(time.Duration(p.TimeoutMs) * time.Millisecond)
	if p.RawRequest != "" {
		return obj{"responses": []json.RawMessage{s.rawServerRequest(p.RawRequest, deadline)}}, nil
	}
	out := make([]json.RawMessage, p.Count)
	one := func(i int) {
		id := s.peer.newID()
		ch := s.peer.register(id)
		defer s.peer.unregister(id)
		s.writeLine(requestLine(id, p.Method, p.Params))
		out[i] = json.RawMessage("null")
		if p.CancelAfterMs > 0 {
			select {
			case line := <-ch:
				out[i] = line
				return
			case <-time.After(time.Duration(p.CancelAfterMs) * time.Millisecond):
			}
			s.notify("notifications/cancelled", obj{"requestId": id, "reason": "test"})
			late := json.RawMessage("null")
			select {
			case line := <-ch:
				late = line
			case <-time.After(lateGrace):
			}
			out[i] = encode(obj{"cancelled": true, "late": late})
			return
		}
		select {
		case line := <-ch:
			out[i] = line
		case <-time.After(time.Until(deadline)):
		}
	}
	if p.Concurrent {
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() { one(i) })
		}
		wg.Wait()
	} else {
		for i := range out {
			one(i)
		}
	}
	return obj{"responses": out}, nil
}

// rawServerRequest writes line verbatim and returns the response carrying
// its id, or the first response matching no pending request.
func (s *server) rawServerRequest(line string, deadline time.Time) json.RawMessage {
	stray := make(chan []byte, 1)
	s.peer.mu.Lock()
	s.peer.unmatched[stray] = struct{}{}
	s.peer.mu.Unlock()
	defer func() {
		s.peer.mu.Lock()
		delete(s.peer.unmatched, stray)
		s.peer.mu.Unlock()
	}()
	var own chan []byte
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal([]byte(line), &head) == nil && len(head.ID) > 0 && (head.ID[0] == '"' || head.ID[0] == '-' || (head.ID[0] >= '0' && head.ID[0] <= '9')) {
		own = s.peer.register(head.ID)
		defer s.peer.unregister(head.ID)
	}
	s.writeLine([]byte(line))
	select {
	case r := <-own:
		return r
	case r := <-stray:
		return r
	case <-time.After(time.Until(deadline)):
		return json.RawMessage("null")
	}
}
