package testserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"sync"
	"time"
)

// Tasks (-tasks): the research tool runs as a task. Legacy requests get
// the 2025-11-25 core tasks (a "task" param on tools/call, tasks/get,
// tasks/result, tasks/cancel, tasks/list, notifications/tasks/status);
// modern ones the io.modelcontextprotocol/tasks extension (resultType
// "task", tasks/get with the result inline, tasks/update, tasks/cancel),
// only for requests whose _meta clientCapabilities declare it.
//
//	research {topic, ms, pollMs, ttlMs, ask, fail}
//	    works ms (default 300) in two halves; with ask, asks for a name in
//	    between (legacy: an elicitation/create request carrying the
//	    related-task _meta; modern: input_required with inputRequests
//	    {"name": elicitation/create}, answered by tasks/update); then
//	    completes with the text "Report on <topic>" (", for <name>"), or
//	    with fail fails with -32603. pollMs (default 100) is the poll
//	    interval the task asks for, ttlMs its TTL (legacy: the task
//	    param's ttl wins; default 60000, 0 unlimited). Tasks are never
//	    purged.

const (
	tasksExtension  = "io.modelcontextprotocol/tasks"
	metaRelatedTask = "io.modelcontextprotocol/related-task"
)

// researchTool is listed with -tasks.
var researchTool = obj{
	"name":        "research",
	"description": "Researches topic, as a task.",
	"inputSchema": obj{"type": "object", "properties": obj{"topic": obj{"type": "string"}}},
	"execution":   obj{"taskSupport": "required"},
}

type researchArgs struct {
	Topic  string `json:"topic"`
	Ms     int    `json:"ms"`
	PollMs *int   `json:"pollMs"`
	TTLMs  *int64 `json:"ttlMs"`
	Ask    bool   `json:"ask"`
	Fail   bool   `json:"fail"`
}

// task is one task of the server.
type task struct {
	id      string
	modern  bool
	created time.Time
	ttlMs   int64 // 0: unlimited
	pollMs  int
	cancel  context.CancelFunc
	answers chan json.RawMessage // modern: the answer to the "name" input request

	mu      sync.Mutex
	status  string
	message string
	updated time.Time
	result  obj
	err     *rpcError
	inputs  obj // modern: outstanding input requests
	done    chan struct{}
}

// taskTable is the server's tasks, by ID, and the URL elicitations the
// url tool asked for.
type taskTable struct {
	mu   sync.Mutex
	m    map[string]*task
	urls map[string]bool
}

// urlTool (unlisted, any era) {id}: the first call with an id answers
// -32042 naming https://example.com/auth/<id>; the next one, "through <id>".
func (s *server) urlTool(p *callParams) (any, *rpcError) {
	var args struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(p.Arguments, &args)
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	if s.tasks.urls[args.ID] {
		delete(s.tasks.urls, args.ID)
		return textResult("through "+args.ID, false), nil
	}
	if s.tasks.urls == nil {
		s.tasks.urls = map[string]bool{}
	}
	s.tasks.urls[args.ID] = true
	return nil, &rpcError{Code: -32042, Message: "This request requires authorization.", Data: encode(obj{
		"elicitations": []obj{{"mode": "url", "elicitationId": "el-" + args.ID,
			"url": "https://example.com/auth/" + args.ID, "message": "Sign in to Example."}},
	})}
}

func newTaskID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// lookupTask finds the task a tasks/* request names; a modern request
// must declare the extension.
func (s *server) lookupTask(req *request) (*task, *rpcError) {
	if req.modern && !declaresTasks(req) {
		return nil, missingTasksCapability()
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	s.tasks.mu.Lock()
	t := s.tasks.m[p.TaskID]
	s.tasks.mu.Unlock()
	if t == nil {
		return nil, errInvalidParams("Failed to retrieve task: Task not found")
	}
	return t, nil
}

// declaresTasks reports whether a modern request declares the extension.
func declaresTasks(req *request) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	_ = json.Unmarshal(req.meta.capabilities, &caps)
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

func missingTasksCapability() *rpcError {
	return &rpcError{Code: -32021, Message: "Missing required client capability",
		Data: encode(obj{"requiredCapabilities": obj{"extensions": obj{tasksExtension: obj{}}}})}
}

func (s *server) research(req *request, p *callParams) (any, *rpcError) {
	switch {
	case req.modern && !declaresTasks(req):
		return nil, missingTasksCapability()
	case !req.modern && p.Task == nil:
		return nil, errMethodNotFound("Tool research requires task augmentation (taskSupport: 'required')")
	}
	args := researchArgs{Ms: 300}
	if len(p.Arguments) > 0 && json.Unmarshal(p.Arguments, &args) != nil {
		return nil, errInvalidParams("arguments must be an object")
	}
	now := time.Now()
	t := &task{id: newTaskID(), modern: req.modern, created: now, ttlMs: 60000, pollMs: 100,
		status: "working", updated: now, done: make(chan struct{}), answers: make(chan json.RawMessage, 1)}
	if args.PollMs != nil {
		t.pollMs = *args.PollMs
	}
	if args.TTLMs != nil {
		t.ttlMs = *args.TTLMs
	}
	if p.Task != nil && p.Task.TTL != nil {
		t.ttlMs = *p.Task.TTL
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	s.tasks.mu.Lock()
	if s.tasks.m == nil {
		s.tasks.m = map[string]*task{}
	}
	s.tasks.m[t.id] = t
	s.tasks.mu.Unlock()
	go s.runResearch(ctx, t, args)
	t.mu.Lock()
	defer t.mu.Unlock()
	if req.modern {
		res := t.wireLocked()
		res["resultType"] = "task"
		return res, nil
	}
	return obj{"task": t.wireLocked()}, nil
}

// runResearch is the task's work.
func (s *server) runResearch(ctx context.Context, t *task, args researchArgs) {
	defer t.cancel()
	s.setTask(t, "working", "Gathering sources", nil, nil)
	if !sleepCtx(ctx, args.Ms/2) {
		return
	}
	name := ""
	if args.Ask {
		var ok bool
		if name, ok = s.askForTask(ctx, t); !ok {
			return
		}
	}
	s.setTask(t, "working", "Writing the report", nil, nil)
	if !sleepCtx(ctx, args.Ms-args.Ms/2) {
		return
	}
	if args.Fail {
		s.setTask(t, "failed", "research failed", nil, &rpcError{Code: -32603, Message: "research failed"})
		return
	}
	text := "Report on " + args.Topic
	if name != "" {
		text += ", for " + name
	}
	s.setTask(t, "completed", "", textResult(text, false), nil)
}

// askForTask asks the client for a name, in the task's era.
func (s *server) askForTask(ctx context.Context, t *task) (string, bool) {
	params := elicitParams(t.modern, 1)
	if !t.modern {
		s.setTask(t, "input_required", "Waiting for a name", nil, nil)
		params["_meta"] = obj{metaRelatedTask: obj{"taskId": t.id}}
		line := s.call(&request{ctx: ctx}, "elicitation/create", params, 30*time.Second)
		if line == nil {
			return "", false
		}
		var resp struct {
			Result json.RawMessage `json:"result"`
		}
		_ = json.Unmarshal(line, &resp)
		name, _, _ := elicitAnswer(resp.Result)
		return name, true
	}
	t.mu.Lock()
	t.inputs = obj{askKey: obj{"method": "elicitation/create", "params": params}}
	t.mu.Unlock()
	s.setTask(t, "input_required", "Waiting for a name", nil, nil)
	select {
	case raw := <-t.answers:
		name, _, _ := elicitAnswer(raw)
		return name, true
	case <-ctx.Done():
		return "", false
	}
}

// setTask moves t to status unless it is terminal already; a terminal
// status records the result or error. Legacy tasks notify the client.
func (s *server) setTask(t *task, status, message string, result obj, err *rpcError) {
	t.mu.Lock()
	if terminal(t.status) {
		t.mu.Unlock()
		return
	}
	t.status, t.message, t.updated = status, message, time.Now()
	t.result, t.err = result, err
	if status != "input_required" {
		t.inputs = nil
	}
	wire := t.wireLocked()
	if terminal(status) {
		close(t.done)
	}
	t.mu.Unlock()
	if !t.modern {
		s.notify("notifications/tasks/status", wire)
	}
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// wireLocked is the task as the era sends it (t.mu held).
func (t *task) wireLocked() obj {
	w := obj{
		"taskId":        t.id,
		"status":        t.status,
		"createdAt":     t.created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": t.updated.UTC().Format(time.RFC3339Nano),
	}
	if t.message != "" {
		w["statusMessage"] = t.message
	}
	var ttl any
	if t.ttlMs > 0 {
		ttl = t.ttlMs
	}
	if t.modern {
		w["ttlMs"], w["pollIntervalMs"] = ttl, t.pollMs
	} else {
		w["ttl"], w["pollInterval"] = ttl, t.pollMs
	}
	return w
}

func (s *server) tasksGet(req *request) (any, *rpcError) {
	t, e := s.lookupTask(req)
	if e != nil {
		return nil, e
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.wireLocked()
	if req.modern {
		switch {
		case t.status == "completed":
			w["result"] = t.result
		case t.status == "failed":
			w["error"] = t.err
		case t.status == "input_required":
			w["inputRequests"] = t.inputs
		}
	}
	return w, nil
}

// tasksResult (legacy) waits for the task to end and answers what the
// tools/call would have.
func (s *server) tasksResult(req *request) (any, *rpcError) {
	if req.modern {
		return nil, errMethodNotFound(req.method)
	}
	t, e := s.lookupTask(req)
	if e != nil {
		return nil, e
	}
	select {
	case <-t.done:
	case <-req.ctx.Done():
		return noAnswer, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return nil, t.err
	}
	if t.status == "cancelled" {
		return nil, errorf(-32603, "the task was cancelled")
	}
	res := obj{"_meta": obj{metaRelatedTask: obj{"taskId": t.id}}}
	for k, v := range t.result {
		res[k] = v
	}
	return res, nil
}

func (s *server) tasksCancel(req *request) (any, *rpcError) {
	t, e := s.lookupTask(req)
	if e != nil {
		return nil, e
	}
	t.mu.Lock()
	status := t.status
	t.mu.Unlock()
	if terminal(status) {
		if req.modern {
			return obj{}, nil // cooperative: acknowledged, nothing to stop
		}
		return nil, errInvalidParams("Cannot cancel task: already in terminal status '" + status + "'")
	}
	s.setTask(t, "cancelled", "The task was cancelled by request.", nil, nil)
	t.cancel()
	if req.modern {
		return obj{}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wireLocked(), nil
}

// tasksUpdate (modern) takes answers to outstanding input requests.
func (s *server) tasksUpdate(req *request) (any, *rpcError) {
	if !req.modern {
		return nil, errMethodNotFound(req.method)
	}
	t, e := s.lookupTask(req)
	if e != nil {
		return nil, e
	}
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	t.mu.Lock()
	_, outstanding := t.inputs[askKey]
	if outstanding {
		if raw, ok := p.InputResponses[askKey]; ok {
			t.inputs = nil
			t.answers <- raw // buffered, one outstanding request at a time
		}
	}
	t.mu.Unlock()
	return obj{}, nil
}

// tasksList (legacy) lists every task, in one page.
func (s *server) tasksList(req *request) (any, *rpcError) {
	if req.modern {
		return nil, errMethodNotFound(req.method)
	}
	s.tasks.mu.Lock()
	list := make([]*task, 0, len(s.tasks.m))
	for _, t := range s.tasks.m {
		list = append(list, t)
	}
	s.tasks.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].created.Before(list[j].created) })
	out := make([]obj, len(list))
	for i, t := range list {
		t.mu.Lock()
		out[i] = t.wireLocked()
		t.mu.Unlock()
	}
	return obj{"tasks": out}, nil
}

// sleepCtx sleeps ms unless ctx ends first (false).
func sleepCtx(ctx context.Context, ms int) bool {
	if ms <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
