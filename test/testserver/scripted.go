package testserver

import (
	"encoding/json"
	"os"
	"time"
)

// Scripted, well-behaved test/ methods.

func (s *server) echo(req *request) (any, *rpcError) {
	if req.params == nil {
		return json.RawMessage("null"), nil
	}
	return req.params, nil
}

// pause waits d, or until the request is cancelled when honor is set; it
// reports whether the wait completed.
func pause(req *request, d time.Duration, honor bool) bool {
	if !honor {
		time.Sleep(d)
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-req.ctx.Done():
		return false
	}
}

func (s *server) sleep(req *request) (any, *rpcError) {
	var p struct {
		Ms          int  `json:"ms"`
		HonorCancel bool `json:"honorCancel"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if !pause(req, time.Duration(p.Ms)*time.Millisecond, p.HonorCancel) {
		return noAnswer, nil
	}
	return obj{"slept": p.Ms}, nil
}

func (s *server) progress(req *request) (any, *rpcError) {
	var p struct {
		Count           int    `json:"count"`
		IntervalMs      int    `json:"intervalMs"`
		Message         string `json:"message"`
		NoProgressToken bool   `json:"noProgressToken"`
		HonorCancel     bool   `json:"honorCancel"`
		StepMethod      string `json:"stepMethod"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	token := req.meta.progressToken
	if token != nil && !p.NoProgressToken {
		for i := 1; i <= p.Count; i++ {
			if i > 1 && p.StepMethod != "" {
				done, ok := s.awaitStep(req, p.StepMethod, i-1)
				if !ok {
					return noAnswer, nil
				}
				if done {
					return obj{"done": i - 1}, nil
				}
			} else if i > 1 && !pause(req, time.Duration(p.IntervalMs)*time.Millisecond, p.HonorCancel) {
				return noAnswer, nil
			}
			n := obj{"progressToken": token, "progress": i, "total": p.Count}
			if p.Message != "" {
				n["message"] = p.Message
			}
			s.notify("notifications/progress", n)
		}
	}
	return obj{"done": p.Count}, nil
}

func (s *server) flood(req *request) (any, *rpcError) {
	p := struct {
		Count  int    `json:"count"`
		Method string `json:"method"`
	}{Method: "notifications/message"}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	for i := 1; i <= p.Count; i++ {
		s.notify(p.Method, obj{"i": i})
	}
	return obj{"sent": p.Count}, nil
}

func (s *server) notifyMethod(req *request) (any, *rpcError) {
	var p struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if p.Method == "" {
		return nil, errInvalidParams("method is required")
	}
	s.notify(p.Method, p.Params)
	return obj{}, nil
}

func (s *server) errorMethod(req *request) (any, *rpcError) {
	var p rpcError
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	return nil, &p
}

func (s *server) env(req *request) (any, *rpcError) {
	var p struct {
		Name string `json:"name"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	v, ok := os.LookupEnv(p.Name)
	return obj{"value": v, "set": ok}, nil
}

func (s *server) cwd(*request) (any, *rpcError) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, errorf(-32603, err.Error())
	}
	return obj{"dir": dir}, nil
}

func (s *server) pid(*request) (any, *rpcError) {
	return obj{"pid": os.Getpid()}, nil
}

func (s *server) exitMethod(req *request) (any, *rpcError) {
	var p struct {
		Code    int `json:"code"`
		AfterMs int `json:"afterMs"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	s.reply(req, obj{}, nil)
	time.Sleep(time.Duration(p.AfterMs) * time.Millisecond)
	s.exit(p.Code)
	return noAnswer, nil
}

// awaitStep waits for the n-th client notification named method (the
// client paces test/progress with stepMethod) and reports whether its
// params say {"done":true}. ok is false when the request was cancelled.
func (s *server) awaitStep(req *request, method string, n int) (done, ok bool) {
	for {
		list, changed := s.journal.notifications(method)
		if len(list) >= n {
			var p struct {
				Done bool `json:"done"`
			}
			_ = json.Unmarshal(list[n-1].Params, &p)
			return p.Done, true
		}
		select {
		case <-changed:
		case <-req.ctx.Done():
			return false, false
		}
	}
}
