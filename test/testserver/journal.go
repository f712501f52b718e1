package testserver

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// entry is one recorded incoming message.
type entry struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id,omitempty"`
	Params json.RawMessage `json:"params"`
}

// journal records every notification and request the server receives.
type journal struct {
	mu      sync.Mutex
	notes   []entry
	reqs    []entry
	changed chan struct{} // closed and replaced when a notification arrives
	file    *os.File      // -journal: every entry appended as a JSON line
}

func (j *journal) init(path string) {
	j.changed = make(chan struct{})
	if path != "" {
		j.file, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
}

// fileLine is one line of a -journal file.
type fileLine struct {
	PID    int             `json:"pid"`
	Kind   string          `json:"kind"` // notification or request
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// append writes one entry to the -journal file, in one write (O_APPEND:
// lines of several servers never interleave). Called with j.mu held.
func (j *journal) append(kind, method string, id, params json.RawMessage) {
	if j.file == nil {
		return
	}
	b, _ := json.Marshal(fileLine{PID: os.Getpid(), Kind: kind, Method: method, ID: id, Params: params})
	_, _ = j.file.Write(append(b, '\n'))
}

func (j *journal) addNotification(method string, params json.RawMessage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.notes = append(j.notes, entry{Method: method, Params: params})
	j.append("notification", method, nil, params)
	close(j.changed)
	j.changed = make(chan struct{})
}

func (j *journal) addRequest(method string, id, params json.RawMessage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reqs = append(j.reqs, entry{Method: method, ID: id, Params: params})
	j.append("request", method, id, params)
}

// filter returns the entries with the given method (all if method is "").
func filter(list []entry, method string) []entry {
	out := []entry{}
	for _, e := range list {
		if method == "" || e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

func (j *journal) notifications(method string) ([]entry, chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return filter(j.notes, method), j.changed
}

type methodParams struct {
	Method    string `json:"method"`
	Count     int    `json:"count"`
	TimeoutMs int    `json:"timeoutMs"`
}

func (s *server) received(req *request) (any, *rpcError) {
	var p methodParams
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	list, _ := s.journal.notifications(p.Method)
	return obj{"messages": list}, nil
}

func (s *server) waitNotification(req *request) (any, *rpcError) {
	p := methodParams{Count: 1, TimeoutMs: 10000}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	timer := time.NewTimer(time.Duration(p.TimeoutMs) * time.Millisecond)
	defer timer.Stop()
	for {
		list, changed := s.journal.notifications(p.Method)
		if len(list) >= p.Count {
			return obj{"messages": list}, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, errorf(-32001, "timed out waiting for notification "+p.Method)
		case <-req.ctx.Done():
			return noAnswer, nil
		}
	}
}

func (s *server) requests(req *request) (any, *rpcError) {
	var p methodParams
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	s.journal.mu.Lock()
	list := filter(s.journal.reqs, p.Method)
	s.journal.mu.Unlock()
	return obj{"requests": list}, nil
}
